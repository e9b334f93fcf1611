package procstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// On Linux every answer is read from /proc directly, as gopsutil reads it
// (TestProcfsIsGopsutils holds each to gopsutil's on live processes), so
// that a program linking procstate does not link gopsutil: its cpu
// package reads /proc/stat twice as it initialises, and gopsutil's set-up
// cost every start of such a program about 0.2 ms, the demo gateway's on
// every restart among them.

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// procBuf is room for the command line or environment most processes
// have; readProc reads a longer one whole.
const procBuf = 4 << 10

// environ splits /proc/<pid>/environ at each NUL; the empty string after
// the last one stays, as gopsutil leaves it.
func environ(_ context.Context, pid int) ([]string, error) {
	var buf [procBuf]byte
	b, err := readProc(procPath(pid, "environ"), buf[:])
	if err != nil {
		return nil, classify(pid, err)
	}
	return strings.Split(string(b), "\x00"), nil
}

// pids lists the names in /proc made of decimal digits alone that fit a
// 32-bit pid.
func pids(context.Context) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, n := range names {
		if n == "" || strings.TrimLeft(n, "0123456789") != "" {
			continue
		}
		if pid, err := strconv.ParseInt(n, 10, 32); err == nil {
			out = append(out, int(pid))
		}
	}
	return out, nil
}

// cmdline is /proc/<pid>/cmdline cut at each NUL, the NULs that end it
// dropped first; an empty file (a kernel thread, a zombie) is no argv.
func cmdline(_ context.Context, pid int) ([]string, error) {
	var buf [procBuf]byte
	b, err := readProc(procPath(pid, "cmdline"), buf[:])
	if err != nil {
		return nil, classify(pid, err)
	}
	if len(b) == 0 {
		return nil, nil
	}
	parts := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
	argv := make([]string, len(parts))
	for i, p := range parts {
		argv[i] = string(p)
	}
	return argv, nil
}

// createTime is psutil's create time in milliseconds, in gopsutil's
// integer steps: start ticks × 1000 / CLK_TCK, plus the boot time × 1000.
func createTime(ctx context.Context, pid int) (int64, error) {
	st, err := readLive(ctx, pid)
	if err != nil {
		return 0, err
	}
	bt, err := bootTime()
	if err != nil {
		return 0, err
	}
	return int64(uint64(*st.start)*1000/uint64(clockTick()) + uint64(bt*1000)), nil
}

// classify maps what reading /proc/<pid> fails with onto this package's
// sentinels: no such file is no such process, unless the process exists
// all the same, hidden from this user by a /proc mounted with hidepid:
// then it may not be inspected.
func classify(pid int, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist) && exists(pid):
		return fmt.Errorf("pid %d: /proc hides it from this user (hidepid), but it exists: %w", pid, ErrPermission)
	case errors.Is(err, os.ErrNotExist):
		return NoProcess(pid)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("pid %d: %w", pid, ErrPermission)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}

// owner reads the Uid line of /proc/<pid>/status: real, effective, saved
// and file-system uid, tab-separated.
func owner(_ context.Context, pid int) (Owner, error) {
	var buf [procBuf]byte
	b, err := readProc(procPath(pid, "status"), buf[:])
	if err != nil {
		return Owner{}, classify(pid, err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 2 {
			break
		}
		r, rerr := strconv.Atoi(string(f[0]))
		e, eerr := strconv.Atoi(string(f[1]))
		if rerr != nil || eerr != nil {
			break
		}
		return Owner{Real: r, Effective: e}, nil
	}
	return Owner{}, fmt.Errorf("pid %d: no Uid line in /proc status", pid)
}
