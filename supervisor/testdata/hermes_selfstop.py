"""A gateway that stops on its own, for the supervisor's tests: READY=1
and a few keep-alives, then STOPPING=1 (as Hermes says on a /restart or a
SIGUSR1 drain) and no more keep-alives. Standard library only. The first
argument picks what follows:

  wedge       block for good: a shutdown that hung
  exit S      exit 0 after S seconds
  extend S    EXTEND_TIMEOUT_USEC=3000000 every 0.3 s; exit 0 after S
              seconds (never, if S is "forever")
"""
# Its sleeps are not waits for an event: they are the gateway's pacing
# (keep-alives at half WATCHDOG_USEC, a shutdown that takes S seconds),
# which is what the supervisor's deadlines are tested against.
import os
import socket
import sys
import time

ADDR = os.environ["NOTIFY_SOCKET"]
USEC = int(os.environ["WATCHDOG_USEC"])


def send(msg):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(ADDR)
        s.send(msg)
    finally:
        s.close()


send(b"READY=1\nSTATUS=running")
for _ in range(3):
    time.sleep(USEC / 2e6)
    send(b"WATCHDOG=1")
send(b"STOPPING=1\nSTATUS=stopping")
mode = sys.argv[1]
if mode == "wedge":
    while True:
        time.sleep(3600)
end = float("inf") if sys.argv[2] == "forever" else time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    if mode == "extend":
        send(b"EXTEND_TIMEOUT_USEC=3000000")
    time.sleep(0.3)
sys.exit(0)
