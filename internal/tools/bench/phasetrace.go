//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// killMarker starts the line the bench writes into the trace just before
// each SIGKILL: the contender's index, its pid and the child's.
const killMarker = "hsbench-kill"

// traceEvent is one line of the trace that parsePhases reads.
type traceEvent struct {
	us        int64 // microseconds, the trace clock
	tid, tgid int
	cpu       int
	kind      eventKind
	a, b      int // fork: child; exec: pid; switch: prev, next; marker: row, supervisor
	c         int // marker: the child killed
}

type eventKind uint8

const (
	evOther eventKind = iota
	evMarker
	evExit
	evFork
	evExec
	evSwitch
	evSyscall
	evRename
)

// parsePhases reads a trace in tracefs' text form (with record-tgid) and
// returns the restarts it holds, cut into restartPhases, by contender
// index. A kill whose restart the trace does not hold whole is left out.
func parsePhases(r io.Reader) (map[int][]phaseSample, error) {
	var evs []traceEvent
	tgid := map[int]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if lost, ok := lostEntries(line); ok && lost > 0 {
				return nil, fmt.Errorf("the trace buffer overran (%d events lost): trace fewer kills", lost)
			}
			continue
		}
		e, ok := parseTraceLine(line)
		if !ok {
			continue
		}
		if e.tgid > 0 {
			tgid[e.tid] = e.tgid
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	of := func(tid int) int {
		if g, ok := tgid[tid]; ok {
			return g
		}
		return tid
	}
	out := map[int][]phaseSample{}
	for i, e := range evs {
		if e.kind != evMarker {
			continue
		}
		end := len(evs)
		for j := i + 1; j < len(evs); j++ {
			if evs[j].kind == evMarker {
				end = j
				break
			}
		}
		if s, ok := cutRestart(evs[i:end], of); ok {
			out[e.a] = append(out[e.a], s)
		}
	}
	return out, nil
}

// cutRestart finds one restart's phases in the events from its kill
// marker to the next marker.
func cutRestart(evs []traceEvent, of func(int) int) (phaseSample, bool) {
	m := evs[0]
	sup, old := m.b, m.c
	forks := map[int]int64{}
	var exits []int64
	var fork, exec, written int64
	child := 0
	for _, e := range evs[1:] {
		switch {
		case e.kind == evExit && of(e.tid) == old:
			exits = append(exits, e.us)
		case e.kind == evFork && of(e.tid) == sup && child == 0:
			forks[e.a] = e.us
		case e.kind == evExec && child == 0:
			if at, ok := forks[e.a]; ok {
				child, fork, exec = e.a, at, e.us
			}
		case e.kind == evRename && child != 0 && of(e.tid) == child:
			written = e.us
		}
		if written != 0 {
			break
		}
	}
	var gone int64
	for _, t := range exits {
		if t <= fork && t > gone {
			gone = t
		}
	}
	if written == 0 || gone == 0 {
		return phaseSample{}, false
	}
	s := phaseSample{}
	notice := int64(0)
	running := map[int]int{} // cpu: thread
	since := map[int]int64{} // cpu: switched in at
	overlap := func(from, to int64) time.Duration {
		from, to = max(from, gone), min(to, fork)
		return time.Duration(max(to-from, 0)) * time.Microsecond
	}
	for _, e := range evs[1:] {
		if e.us > fork {
			break
		}
		if _, ok := running[e.cpu]; !ok {
			// The first event seen on a CPU is its task's, or the task
			// switched out: on that CPU since the kill, or before it.
			running[e.cpu], since[e.cpu] = e.tid, m.us
		}
		if e.kind == evSwitch {
			if of(e.a) == sup {
				s.cpu += overlap(since[e.cpu], e.us)
			}
			running[e.cpu], since[e.cpu] = e.b, e.us
			if e.us >= gone && of(e.b) == sup {
				s.switches++
				if notice == 0 {
					notice = e.us
				}
			}
		}
		if e.us >= gone && of(e.tid) == sup {
			if notice == 0 {
				notice = e.us
			}
			if e.kind == evSyscall {
				s.syscalls++
			}
		}
	}
	for cpu, tid := range running {
		if of(tid) == sup {
			s.cpu += overlap(since[cpu], fork)
		}
	}
	if notice == 0 || notice > fork {
		notice = fork
	}
	at := [...]int64{m.us, gone, notice, fork, exec, written}
	for i := range s.phase {
		s.phase[i] = time.Duration(at[i+1]-at[i]) * time.Microsecond
	}
	return s, true
}

// lostEntries reads tracefs' "entries-in-buffer/entries-written: a/b"
// header: b-a events were overwritten before they were read.
func lostEntries(line string) (int, bool) {
	_, rest, ok := strings.Cut(line, "entries-in-buffer/entries-written:")
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	in, written, ok := strings.Cut(f[0], "/")
	if !ok {
		return 0, false
	}
	a, err1 := strconv.Atoi(in)
	b, err2 := strconv.Atoi(written)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return b - a, true
}

// parseTraceLine reads one event line:
//
//	comm-TID (TGID) [CPU] FLAGS SECONDS.MICROS: event: fields
//
// where comm may hold spaces and dashes, and a syscall event reads
// "sys_renameat(fields)".
func parseTraceLine(line string) (traceEvent, bool) {
	var e traceEvent
	open := strings.Index(line, " (")
	cpuAt := strings.Index(line, ") [")
	if open < 0 || cpuAt < open {
		return e, false
	}
	dash := strings.LastIndexByte(line[:open], '-')
	if dash < 0 {
		return e, false
	}
	var err error
	if e.tid, err = strconv.Atoi(strings.TrimSpace(line[dash+1 : open])); err != nil {
		return e, false
	}
	e.tgid, _ = strconv.Atoi(strings.TrimSpace(line[open+2 : cpuAt])) // "-------" when unknown
	rest := line[cpuAt+3:]
	cpuEnd := strings.IndexByte(rest, ']')
	if cpuEnd < 0 {
		return e, false
	}
	if e.cpu, err = strconv.Atoi(rest[:cpuEnd]); err != nil {
		return e, false
	}
	f := strings.Fields(rest[cpuEnd+1:])
	// FLAGS, then the timestamp ending in ':'.
	if len(f) < 3 || !strings.HasSuffix(f[1], ":") {
		return e, false
	}
	sec, frac, ok := strings.Cut(strings.TrimSuffix(f[1], ":"), ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || err1 != nil || err2 != nil || len(frac) != 6 {
		return e, false
	}
	e.us = s*1_000_000 + us
	name := f[2]
	body := strings.Join(f[3:], " ")
	switch {
	case name == "tracing_mark_write:":
		if len(f) == 7 && f[3] == killMarker {
			e.kind = evMarker
			e.a, err1 = strconv.Atoi(f[4])
			e.b, err2 = strconv.Atoi(f[5])
			var err3 error
			e.c, err3 = strconv.Atoi(f[6])
			if err1 != nil || err2 != nil || err3 != nil {
				return e, false
			}
		}
	case name == "sched_process_exit:":
		e.kind = evExit // judged by its task's thread group
	case name == "sched_process_fork:":
		e.kind, e.a = evFork, field(body, "child_pid=")
	case name == "sched_process_exec:":
		e.kind, e.a = evExec, field(body, " pid=")
	case name == "sched_switch:":
		e.kind, e.a, e.b = evSwitch, field(body, "prev_pid="), field(body, "next_pid=")
	case name == "sys_enter:":
		e.kind = evSyscall
	case strings.HasPrefix(name, "sys_renameat"):
		e.kind = evRename
	}
	return e, true
}

// field reads the integer after key in an event's fields, 0 when absent.
func field(body, key string) int {
	i := strings.Index(" "+body, key)
	if i < 0 {
		return 0
	}
	rest := (" " + body)[i+len(key):]
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.Atoi(rest[:end])
	return n
}
