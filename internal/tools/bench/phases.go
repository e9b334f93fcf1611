//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	required := len(events)
	for _, e := range []string{"syscalls:sys_enter_renameat", "syscalls:sys_enter_renameat2"} {
		if strings.Contains(string(avail), e+"\n") {
			events = append(events, e)
		}
	}
	if len(events) == required {
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
	var markErr error
	for i := range cts {
		cts[i].beforeKill = func(supervisor, pid int) {
			if _, err := fmt.Fprintf(marker, "%s %d %d %d\n", killMarker, i, supervisor, pid); err != nil && markErr == nil {
				markErr = err
			}
		}
	}
	if _, err := measureInTurn(ctx, c, cts); err != nil {
		return phasesResult{}, err
	}
	if markErr != nil {
		return phasesResult{}, fmt.Errorf("mark a kill in the trace: %w", markErr)
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
	return phasesOf(byRow, []string{cts[0].name, cts[1].name}), nil
}

// phasesOf names parsePhases' rows; a row the trace holds no whole
// restart of leaves the section not measured, rather than a table of
// medians of nothing.
func phasesOf(byRow map[int][]phaseSample, names []string) phasesResult {
	r := phasesResult{rows: names, samples: map[string][]phaseSample{}}
	for i, name := range names {
		if len(byRow[i]) == 0 {
			return phasesResult{skipped: "the trace held no whole restart of " + name}
		}
		r.samples[name] = byRow[i]
	}
	return r
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
	// The dead child's output pipes close, and wake hermes-supervisor,
	// before the kernel has finished the exit that wakes the floor: its
	// notice ends sooner and its prepare starts sooner than the floor's.
	row("notice + prepare", "the old child's exit → the fork: the two together compare fairly, since hermes-supervisor is woken by the dead child's output pipes closing, before the kernel has finished the exit that wakes the floor", func(s phaseSample) time.Duration { return s.phase[1] + s.phase[2] })
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
