package procstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// Hermes reads /proc/<pid>/stat field 22 itself, so reading the same field
// gives exact equality: no drift window is needed.
const defaultStartTolerance = 0

// pidZeroExists: Linux has no process 0 in /proc, so psutil reports it
// gone, as Look does.
const pidZeroExists = false

// readLive reads state and start time from one /proc/<pid>/stat read.
func readLive(_ context.Context, pid int) (liveState, error) {
	// A lock dir of stale files names mostly dead pids. kill(2) says so
	// in a tenth of the time a failed /proc lookup takes, and on the same
	// answer Hermes' _pid_exists calls the pid dead (psutil.pid_exists
	// asks kill(pid, 0) first).
	if !processExists(pid) {
		return liveState{}, NoProcess(pid)
	}
	var buf [512]byte
	b, err := readProc(procPath(pid, "stat"), buf[:])
	if err != nil {
		return liveState{}, classify(pid, err)
	}
	st, err := parseStat(pid, b)
	if err != nil || !st.hermesFails {
		return st, err
	}
	// Hermes falls back to psutil's create time for this process.
	if st.epochStart, err = epochStart(*st.start); err != nil {
		return liveState{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return st, nil
}

// readProc reads a small /proc file with three system calls; os.ReadFile
// adds a stat and poller set-up, which doubles the cost of a sweep's
// identity checks on a VM where each system call is expensive.
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
	// Longer than buf (a stat line is not, with its 16-byte comm; a
	// command line or environment may be): read it the slow way.
	return os.ReadFile(path)
}

// parseStat splits after the last ')' because comm may hold spaces and
// parentheses, as psutil does; Hermes' own reading of the line is
// hermesStart's.
func parseStat(pid int, b []byte) (liveState, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return liveState{}, fmt.Errorf("pid %d: malformed /proc stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return liveState{}, fmt.Errorf("pid %d: short /proc stat", pid)
	}
	start, err := strconv.ParseInt(string(f[19]), 10, 64)
	if err == nil && start < 0 {
		err = errors.New("negative")
	}
	if err != nil {
		return liveState{}, fmt.Errorf("pid %d: /proc stat start time: %w", pid, err)
	}
	st := liveState{start: &start}
	// The name is the one part of the line that is not ASCII digits and
	// separators: what holds for its bytes holds for /proc/<pid>/status,
	// whose Name line escapes only ASCII characters of it.
	st.nameNotUTF8 = !utf8.Valid(b)
	if naive, ok := hermesStart(b, st.nameNotUTF8, start); !ok {
		st.hermesFails = true
	} else if naive != start {
		st.naiveStart = &naive
	}
	switch f[0][0] {
	case 'Z', 'X', 'x':
		st.zombie = true
	case 'T', 't':
		st.stopped = true
	}
	return st, nil
}

// hermesStart is _get_process_start_time's own reading of the stat line:
// int(text.split()[21]) of the line decoded as UTF-8. ok is false where
// that raises (a name that is not UTF-8, or a field int() rejects), and
// Hermes then records psutil's create time (see epochCenti). A name of
// printable ASCII without spaces splits as the kernel's fields do, so
// its reading is start, the true field 22; only other names take
// Python's slower path.
func hermesStart(b []byte, notUTF8 bool, start int64) (int64, bool) {
	switch {
	case notUTF8:
		return 0, false // UnicodeDecodeError, a ValueError
	case plainName(b):
		return start, true
	}
	f := pyparse.Split(string(b))
	if len(f) < 22 {
		return 0, false // IndexError
	}
	return pyparse.Int(f[21])
}

// plainName reports whether the name between the first '(' and the last
// ')' of a stat line is printable ASCII without spaces, so that
// str.split() and bytes.Fields cut the line alike.
func plainName(b []byte) bool {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return false
	}
	for _, c := range b[i:j] {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// epochCenti is psutil's create time on Linux as Hermes records it when
// its own reading of /proc/<pid>/stat raises:
// int(round((float(ticks)/CLK_TCK + btime)*100)), in float64 as Python
// computes it, halves to even as round() does. ok is false for a value
// beyond int64, which no record can hold as a start time.
func epochCenti(ticks, clkTck, btime int64) (int64, bool) {
	if clkTck <= 0 {
		return 0, false
	}
	// Each step is its own float64 conversion so that no fused
	// multiply-add changes the rounding Python's steps have.
	secs := float64(float64(ticks)/float64(clkTck)) + float64(btime)
	v := math.RoundToEven(float64(secs * 100))
	if v >= math.MaxInt64 || v < math.MinInt64 {
		return 0, false
	}
	return int64(v), true
}

// epochStart is epochCenti for the process of a stat line, with the boot
// time /proc/stat gives now, as psutil reads it on each call, and the
// clock tick the kernel gave this process (sysconf(_SC_CLK_TCK) reads the
// same). It costs a read of /proc/stat, so only processes Hermes cannot
// read the stat line of pay it.
func epochStart(ticks int64) (*int64, error) {
	bt, err := bootTime()
	if err != nil {
		return nil, err
	}
	v, ok := epochCenti(ticks, clockTick(), bt)
	if !ok {
		return nil, nil
	}
	return &v, nil
}

// atClkTck is the auxiliary-vector key of the clock tick (AT_CLKTCK).
const atClkTck = 17

// clockTick is USER_HZ as the kernel told this process; 100, the value
// every Linux architecture but Alpha uses, when it did not.
func clockTick() int64 {
	if av, err := unix.Auxv(); err == nil {
		for _, kv := range av {
			if kv[0] == atClkTck && kv[1] > 0 {
				return int64(kv[1])
			}
		}
	}
	return 100
}

// bootTime is the btime line of /proc/stat, read as psutil's boot_time()
// reads it: float() of its second whitespace-separated field.
func bootTime() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read boot time: %w", err)
	}
	for line := range bytes.Lines(b) {
		if f := bytes.Fields(line); len(f) >= 2 && bytes.HasPrefix(line, []byte("btime")) {
			v, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read boot time: /proc/stat btime %q: %w", f[1], err)
			}
			return v, nil
		}
	}
	return 0, errors.New("read boot time: no btime line in /proc/stat")
}

// compareStart: Hermes reads the same clock-tick field, so only equality
// (with the true field, with Hermes' own reading of it, or with the epoch
// time it records where that reading raises) is the same start. A recorded start time later than the live one, as one from
// another boot can be, is a conflict like any other difference.
func compareStart(recorded int64, l Live, _ time.Time) (same, known bool) {
	if recorded == *l.StartTime || (l.NaiveStartTime != nil && recorded == *l.NaiveStartTime) ||
		(l.EpochStartTime != nil && recorded == *l.EpochStartTime) {
		return true, true
	}
	return false, true
}
