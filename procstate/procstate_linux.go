package procstate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
)

// Hermes reads /proc/<pid>/stat field 22 itself, so reading the same field
// gives exact equality: no drift window is needed.
const defaultStartTolerance = 0

// readLive reads state and start time from one /proc/<pid>/stat read.
func readLive(_ context.Context, pid int) (liveState, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return liveState{}, classify(pid, err)
	}
	return parseStat(pid, b)
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
	if err != nil {
		return liveState{}, fmt.Errorf("pid %d: /proc stat start time: %w", pid, err)
	}
	st := liveState{start: &start}
	switch f[0][0] {
	case 'Z', 'X', 'x':
		st.zombie = true
	case 'T', 't':
		st.stopped = true
	}
	return st, nil
}
