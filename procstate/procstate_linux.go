package procstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Hermes reads /proc/<pid>/stat field 22 itself, so reading the same field
// gives exact equality: no drift window is needed.
const defaultStartTolerance = 0

// pidZeroExists: Linux has no process 0 in /proc, so psutil reports it
// gone, as Look does.
const pidZeroExists = false

// readLive reads state and start time from one /proc/<pid>/stat read.
func readLive(_ context.Context, pid int) (liveState, error) {
	var buf [512]byte
	b, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return liveState{}, classify(pid, err)
	}
	return parseStat(pid, b)
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
	// Longer than any stat line with a 16-byte comm: read it the slow way.
	return os.ReadFile(path)
}

// parseStat splits after the last ')' because comm may hold spaces and
// parentheses; Hermes' plain whitespace split gives the same field for every
// gateway, whose comm has neither.
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
	st := liveState{start: &start, naiveStart: naiveStart(b, start)}
	switch f[0][0] {
	case 'Z', 'X', 'x':
		st.zombie = true
	case 'T', 't':
		st.stopped = true
	}
	return st, nil
}

// naiveStart is the start time Hermes records: it splits the whole stat
// line on whitespace and takes the 22nd field, which is another field when
// comm holds spaces, and fails (Hermes then asks psutil, which reads the
// true one) when that field is not a number.
func naiveStart(b []byte, start int64) *int64 {
	f := bytes.Fields(b)
	if len(f) < 22 {
		return nil
	}
	v, err := strconv.ParseInt(string(f[21]), 10, 64)
	if err != nil || v == start {
		return nil
	}
	return &v
}

// compareStart: Hermes reads the same clock-tick field, so only equality
// (with the true field or with Hermes' own reading of it) is the same
// start. A recorded start time later than the live one, as one from
// another boot can be, is a conflict like any other difference.
func compareStart(recorded int64, l Live, _ time.Time) (same, known bool) {
	if recorded == *l.StartTime || (l.NaiveStartTime != nil && recorded == *l.NaiveStartTime) {
		return true, true
	}
	return false, true
}

// otherUser: Linux reports an unreadable command line as a permission error.
func otherUser(error) bool { return false }
