"""Print the start time Hermes records for the pid in argv[1].

It is gateway/status.py's _get_process_start_time (NousResearch/hermes-agent
@ 00067189) with psutil's Linux create_time (psutil/_pslinux.py, every
release from 5.9 to 7.2) written out, so that it runs without psutil:

  int(Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split()[21]),
  and where that raises FileNotFoundError, IndexError, PermissionError,
  ValueError (UnicodeDecodeError is one) or OSError:
  int(round((float(starttime)/os.sysconf("SC_CLK_TCK") + btime) * 100)),
  starttime being field 22 counted after the last ")", btime the btime line
  of /proc/stat.

It prints "read VALUE" for the first case, "fallback VALUE" for the second,
then "raises" when _process_is_stopped's read of /proc/<pid>/status,
read_text(encoding="utf-8-sig"), raises UnicodeDecodeError, else "reads".
"""
import os
import sys
from pathlib import Path

pid = int(sys.argv[1])
try:
    Path(f"/proc/{pid}/status").read_text(encoding="utf-8-sig")
    status = "reads"
except UnicodeDecodeError:
    status = "raises"
try:
    print("read", int(Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split()[21]), status)
    sys.exit(0)
except (FileNotFoundError, IndexError, PermissionError, ValueError, OSError):
    pass
data = Path(f"/proc/{pid}/stat").read_bytes()
ticks = float(data[data.rfind(b")") + 2:].split()[19])
with open("/proc/stat", "rb") as f:
    btime = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
print("fallback", int(round((ticks / os.sysconf("SC_CLK_TCK") + btime) * 100)), status)
