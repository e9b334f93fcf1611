package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// statMax bounds one /proc/<pid>/stat read: the kernel writes ~300 bytes
// plus a 16-byte command name.
const statMax = 4 << 10

// readProc reads /proc/<pid>/stat into an entry.
func readProc(pid int) (procEntry, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, statMax))
	if err != nil {
		return procEntry{}, err
	}
	return parseStat(pid, b)
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
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		if e, err := readProc(pid); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
