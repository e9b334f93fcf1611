package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// statMax bounds one /proc/<pid>/stat read: the kernel writes ~300 bytes
// plus a 16-byte command name.
const statMax = 4 << 10

// readProc reads /proc/<pid>/stat into an entry.
func readProc(pid int) (procEntry, error) {
	var buf [statMax]byte
	return readProcInto(pid, buf[:])
}

// readProcInto is readProc with the caller's buffer. It goes to the
// kernel directly: an os.File would add four fcntl calls and an
// epoll_ctl to every open, and a table read opens every process's file,
// on every restart.
func readProcInto(pid int, buf []byte) (procEntry, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return procEntry{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	// The kernel renders the whole line at the first read into a buffer
	// that holds it, so a read that leaves room is the whole file: the
	// read that would return end-of-file is saved, once per process.
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return procEntry{}, &os.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(buf) {
			break
		}
	}
	return parseStat(pid, buf[:n])
}

// parseStat reads pid, state, ppid, pgrp and starttime from a stat line.
// The command name may hold anything, ')' included, so the fields are
// counted from the last ')'.
func parseStat(pid int, b []byte) (procEntry, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procEntry{}, fmt.Errorf("/proc/%d/stat: %w", pid, errBadStat)
	}
	f := bytes.Fields(b[end+1:])
	// state is field 3, ppid 4, pgrp 5, starttime 22; f[0] is field 3.
	if len(f) < 20 || len(f[0]) != 1 {
		return procEntry{}, fmt.Errorf("/proc/%d/stat: %w", pid, errBadStat)
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procEntry{}, fmt.Errorf("/proc/%d/stat: %w: %w", pid, errBadStat, err)
	}
	return procEntry{pid: pid, ppid: ppid, pgid: pgid, start: start, name: string(b[open+1 : end]), state: f[0][0]}, nil
}

var errBadStat = errors.New("unexpected format")

// readProcs reads every process of /proc; a process that exits while it
// is read is left out.
func readProcs() ([]procEntry, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]procEntry, 0, len(names))
	buf := make([]byte, statMax)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		if e, err := readProcInto(pid, buf); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
