//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// restartPhases are the stretches of a restart as the kernel's own trace
// events mark them, the same for the floor and for hermes-supervisor, so
// that a row's time over the floor can be placed: in the supervisor's
// work, or in a child that starts slower beside it.
var restartPhases = []struct{ key, what string }{
	{"die", "the SIGKILL is sent → the child's last thread exits (`sched_process_exit`)"},
	{"notice", "→ the supervisor runs again (its first trace event after that exit)"},
	{"prepare", "→ it forks the next child (`sched_process_fork`): all it does between one child and the next"},
	{"exec", "→ the new child has exec'd the bench child (`sched_process_exec`)"},
	{"startup", "→ the child renames its pid file into place (`renameat`), which the bench waits for"},
}

// phaseSample is one restart cut into restartPhases, with what the
// supervisor did between the old child's exit and the fork.
type phaseSample struct {
	phase    [5]time.Duration
	cpu      time.Duration // its threads on a CPU
	syscalls int           // system calls it entered
	switches int           // times one of its threads was switched in
}

type phasesResult struct {
	skipped string                   // why the section was not measured
	rows    []string                 // contender names, in the order of the table
	samples map[string][]phaseSample // by contender name
}

const tracefsDir = "/sys/kernel/tracing"

// ftrace is the kernel's tracing, set up for one measurement and put back
// as it was.
type ftrace struct {
	dir     string
	mounted bool
	undo    []func()
}

// openFtrace mounts tracefs when it is not mounted yet; tracing needs
// root, so a bench run by a user reports the section as not measured.
func openFtrace() (*ftrace, error) {
	t := &ftrace{dir: tracefsDir}
	if _, err := os.Stat(filepath.Join(t.dir, "trace_marker")); err != nil {
		if err := unix.Mount("nodev", t.dir, "tracefs", 0, ""); err != nil {
			return nil, fmt.Errorf("the kernel's tracing is not mounted at %s and could not be (it needs root): %w", t.dir, err)
		}
		t.mounted = true
	}
	return t, nil
}

// set writes value into one of tracefs' settings, remembering what to
// put back.
func (t *ftrace) set(name, value string) error {
	path := filepath.Join(t.dir, name)
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := t.write(name, value); err != nil {
		return err
	}
	var was []string
	for _, l := range strings.Split(string(old), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			was = append(was, l)
		}
	}
	t.undo = append(t.undo, func() {
		if strings.HasPrefix(name, "set_") {
			// A list (set_event, set_event_pid) reads back as its
			// entries, one a line: emptied and refilled, it is as it was.
			_ = t.write(name, "")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return
			}
			defer f.Close()
			for _, l := range was {
				_, _ = f.WriteString(l + "\n")
			}
			return
		}
		// A value reads back as itself, or as "7 (expanded: 1408)", the
		// buffer's size before and after its first use.
		if len(was) > 0 {
			_ = t.write(name, strings.Fields(was[0])[0])
		}
	})
	return nil
}

// write writes into one of tracefs' files: a setting, or an action such as
// emptying the trace.
func (t *ftrace) write(name, value string) error {
	path := filepath.Join(t.dir, name)
	if err := os.WriteFile(path, []byte(value+"\n"), 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (t *ftrace) close() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	if t.mounted {
		_ = unix.Unmount(t.dir, 0)
	}
}

// traceRestarts traces the floor and hermes-supervisor side by side, as
// section 1 runs them, and cuts each restart into restartPhases.
func traceRestarts(ctx context.Context, c config, self, child string) (phasesResult, error) {
	ft, err := openFtrace()
	if err != nil {
		return phasesResult{skipped: err.Error()}, nil
	}
	defer ft.close()
	avail, err := os.ReadFile(filepath.Join(ft.dir, "available_events"))
	if err != nil {
		return phasesResult{}, err
	}
	events := []string{"sched:sched_switch", "sched:sched_process_fork", "sched:sched_process_exec",
		"sched:sched_process_exit", "raw_syscalls:sys_enter"}
	for _, e := range events {
		if !strings.Contains(string(avail), e+"\n") {
			return phasesResult{skipped: "this kernel has no " + e + " trace event"}, nil
		}
	}
	renames := 0
	for _, e := range []string{"syscalls:sys_enter_renameat", "syscalls:sys_enter_renameat2"} {
		if strings.Contains(string(avail), e+"\n") {
			events = append(events, e)
			renames++
		}
	}
	if renames == 0 {
		return phasesResult{skipped: "this kernel has no renameat trace event"}, nil
	}
	// Only the bench and what it starts are traced: event-fork adds each
	// process and thread they make to the filter as it is made.
	var pids []string
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return phasesResult{}, err
	}
	for _, task := range tasks {
		pids = append(pids, task.Name())
	}
	for _, s := range [][2]string{
		{"tracing_on", "0"}, {"current_tracer", "nop"}, {"buffer_size_kb", "16384"},
		{"options/record-tgid", "1"}, {"options/event-fork", "1"},
		{"set_event_pid", strings.Join(pids, " ")}, {"set_event", strings.Join(events, " ")},
	} {
		if err := ft.set(s[0], s[1]); err != nil {
			return phasesResult{}, err
		}
	}
	if err := ft.write("trace", ""); err != nil {
		return phasesResult{}, err
	}
	if err := ft.write("tracing_on", "1"); err != nil {
		return phasesResult{}, err
	}
	marker, err := os.OpenFile(filepath.Join(ft.dir, "trace_marker"), os.O_WRONLY, 0)
	if err != nil {
		return phasesResult{}, err
	}
	defer marker.Close()
	hs := contender{name: "hermes-supervisor", cmd: supervised(c, c.supervisor, child)}
	cts := []contender{floorContender(self, child), hs}
	for i := range cts {
		cts[i].beforeKill = func(supervisor, pid int) {
			fmt.Fprintf(marker, "%s %d %d %d\n", killMarker, i, supervisor, pid)
		}
	}
	if _, err := measureInTurn(ctx, c, cts); err != nil {
		return phasesResult{}, err
	}
	if err := ft.write("tracing_on", "0"); err != nil {
		return phasesResult{}, err
	}
	f, err := os.Open(filepath.Join(ft.dir, "trace"))
	if err != nil {
		return phasesResult{}, err
	}
	defer f.Close()
	byRow, err := parsePhases(f)
	if err != nil {
		return phasesResult{}, err
	}
	r := phasesResult{samples: map[string][]phaseSample{}}
	for i, ct := range cts {
		r.rows = append(r.rows, ct.name)
		r.samples[ct.name] = byRow[i]
	}
	return r, nil
}

// killMarker starts the line the bench writes into the trace just before
// each SIGKILL: the contender's index, its pid and the child's.
const killMarker = "hsbench-kill"

// traceEvent is one line of the trace that parsePhases reads.
type traceEvent struct {
	us        int64 // microseconds, the trace clock
	tid, tgid int
	cpu       int
	kind      eventKind
	a, b      int // exit: pid; fork: child; exec: pid; switch: prev, next; marker: row, supervisor
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
		e.kind, e.a = evExit, field(body, " pid=")
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

func (r *report) phasesSection(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	ph := r.phases
	p("## 1b. Restart phases, as the kernel saw them\n\n")
	if ph.skipped != "" {
		p("Not measured: %s.\n\n", ph.skipped)
		return
	}
	floor, hs := ph.samples[ph.rows[0]], ph.samples[ph.rows[1]]
	p("The floor and hermes-supervisor of section 1 run again side by side, the same child, gap and order of kills, %d kills each, with the kernel's scheduler and system-call trace events on (tracefs, for the bench and what it starts only; %d and %d restarts were traced whole). ", r.cfg.kills, len(floor), len(hs))
	p("Each restart is cut where the kernel marks it, the same way for both rows, so that a row's time over the floor is placed: in the supervisor's own work between one child and the next, or in a child that dies or starts slower beside it. ")
	p("Each event costs the trace a little, and hermes-supervisor makes more of them, so its times are a little above section 1's. Medians of phases do not add up to the median total.\n\n")
	p("| Phase | What | floor median µs | hermes-supervisor median µs | difference µs |\n|---|---|---|---|---|\n")
	med := func(ss []phaseSample, f func(phaseSample) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ss))
		for i, s := range ss {
			ds[i] = f(s)
		}
		return summarize(ds).Med
	}
	row := func(name, what string, f func(phaseSample) time.Duration) {
		a, b := med(floor, f), med(hs, f)
		p("| %s | %s | %d | %d | %+d |\n", name, what, a.Microseconds(), b.Microseconds(), (b - a).Microseconds())
	}
	for i, ph := range restartPhases {
		row(ph.key, ph.what, func(s phaseSample) time.Duration { return s.phase[i] })
	}
	row("total", "the SIGKILL → the pid file renamed", func(s phaseSample) time.Duration {
		var t time.Duration
		for _, d := range s.phase {
			t += d
		}
		return t
	})
	row("its CPU", "the supervisor's threads on a CPU from the old child's exit to the fork", func(s phaseSample) time.Duration { return s.cpu })
	count := func(ss []phaseSample, f func(phaseSample) int) int {
		ds := make([]time.Duration, len(ss))
		for i, s := range ss {
			ds[i] = time.Duration(f(s))
		}
		return int(summarize(ds).Med)
	}
	for _, c := range []struct {
		name, what string
		f          func(phaseSample) int
	}{
		{"its system calls", "the system calls it entered from the old child's exit to the fork", func(s phaseSample) int { return s.syscalls }},
		{"its switches", "times one of its threads was switched in, from the old child's exit to the fork", func(s phaseSample) int { return s.switches }},
	} {
		a, b := count(floor, c.f), count(hs, c.f)
		p("| %s | %s | %d | %d | %+d |\n", c.name, c.what, a, b, b-a)
	}
	p("\n")
}
