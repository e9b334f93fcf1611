//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

// phasesTrace holds one restart of each row, as tracefs writes them, and
// a last kill whose restart the trace does not hold.
const phasesTrace = `# tracer: nop
#
# entries-in-buffer/entries-written: 30/30   #P:2
#
           bench-100     (    100) [000] ...1.  1000.000000: tracing_mark_write: hsbench-kill 0 200 300
           child-301     (    300) [001] .....  1000.000100: sched_process_exit: comm=child pid=301 prio=120 group_dead=false
           child-300     (    300) [001] .....  1000.000150: sched_process_exit: comm=child pid=300 prio=120 group_dead=true
          <idle>-0       (-------) [000] d..2.  1000.000200: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=floor next_pid=200 next_prio=120
           floor-200     (    200) [000] .....  1000.000210: sys_enter: NR 247 (3, c, 0, 0, 0, 0)
           other-999     (    999) [001] .....  1000.000220: sys_enter: NR 0 (3, 0, 0, 0, 0, 0)
           floor-200     (    200) [000] .....  1000.000300: sched_process_fork: comm=floor pid=200 child_comm=floor child_pid=310
           floor-200     (    200) [000] d..2.  1000.000305: sched_switch: prev_comm=floor prev_pid=200 prev_prio=120 prev_state=D ==> next_comm=floor next_pid=310 next_prio=120
           child-310     (    310) [000] .....  1000.000400: sched_process_exec: filename=/x/child pid=310 old_pid=310
           child-311     (    310) [001] .....  1000.001000: sys_enter: NR 9 (0, 0, 0, 0, 0, 0)
           child-310     (    310) [000] .....  1000.001400: sys_renameat(olddfd: 0xffffffffffffff9c, oldname: 0x1, newdfd: 0xffffffffffffff9c, newname: 0x2)
           bench-100     (    100) [001] ...1.  1002.000000: tracing_mark_write: hsbench-kill 1 500 600
 hermes sup-501     (    500) [000] .....  1002.000050: sys_enter: NR 35 (0, 0, 0, 0, 0, 0)
           child-600     (    600) [001] .....  1002.000100: sched_process_exit: comm=child pid=600 prio=120 group_dead=true
 hermes sup-501     (    500) [000] .....  1002.000120: sys_enter: NR 281 (0, 0, 0, 0, 0, 0)
 hermes sup-501     (    500) [000] .....  1002.000200: sched_process_fork: comm=hs pid=501 child_comm=hs child_pid=502
          <idle>-0       (-------) [001] d..2.  1002.000300: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hs next_pid=502 next_prio=120
 hermes sup-502     (    500) [001] .....  1002.000310: sys_enter: NR 202 (0, 0, 0, 0, 0, 0)
 hermes sup-502     (    500) [001] d..2.  1002.000400: sched_switch: prev_comm=hs prev_pid=502 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 hermes sup-501     (    500) [000] .....  1002.000600: sched_process_fork: comm=hs pid=501 child_comm=hs child_pid=610
 hermes sup-501     (    500) [000] d..2.  1002.000610: sched_switch: prev_comm=hs prev_pid=501 prev_prio=120 prev_state=D ==> next_comm=hs next_pid=610 next_prio=120
           child-610     (    610) [000] .....  1002.000800: sched_process_exec: filename=/x/child pid=610 old_pid=610
           child-610     (    610) [000] .....  1002.002000: sys_renameat(olddfd: 0xffffffffffffff9c, oldname: 0x1, newdfd: 0xffffffffffffff9c, newname: 0x2)
           bench-100     (    100) [001] ...1.  1004.000000: tracing_mark_write: hsbench-kill 1 500 610
           child-610     (    610) [001] .....  1004.000100: sched_process_exit: comm=child pid=610 prio=120 group_dead=true
`

func TestParsePhasesCutsEachRestartWhereTheKernelMarksIt(t *testing.T) {
	got, err := parsePhases(strings.NewReader(phasesTrace))
	if err != nil {
		t.Fatal(err)
	}
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	want := map[int]phaseSample{
		// The floor: its thread was idle until switched in at 200, and on
		// the CPU until it forked at 300.
		0: {phase: [5]time.Duration{us(150), us(50), us(100), us(100), us(1000)}, cpu: us(100), syscalls: 1, switches: 1},
		// hermes-supervisor: its thread 501 was on the CPU since before the
		// kill, so it is counted from the exit to the fork (500 µs); a
		// thread it made (502, which never execs) ran 100 µs more.
		1: {phase: [5]time.Duration{us(100), us(20), us(480), us(200), us(1200)}, cpu: us(600), syscalls: 2, switches: 1},
	}
	for row, w := range want {
		if len(got[row]) != 1 {
			t.Fatalf("row %d: %d restarts, want 1 (the last kill's restart is not in the trace)", row, len(got[row]))
		}
		if g := got[row][0]; g != w {
			t.Errorf("row %d:\n got %+v\nwant %+v", row, g, w)
		}
	}
}

func TestParsePhasesRefusesAnOverrunTrace(t *testing.T) {
	trace := strings.Replace(phasesTrace, "30/30", "30/45", 1)
	if _, err := parsePhases(strings.NewReader(trace)); err == nil || !strings.Contains(err.Error(), "15 events lost") {
		t.Fatalf("got %v, want an error that says 15 events were lost", err)
	}
}

func TestParseTraceLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want traceEvent
	}{
		{"  my-prog x-123   (    120) [001] d..2.  5.000042: sched_switch: prev_comm=a prev_pid=123 prev_prio=120 prev_state=S ==> next_comm=b next_pid=7 next_prio=120",
			true, traceEvent{us: 5_000_042, tid: 123, tgid: 120, cpu: 1, kind: evSwitch, a: 123, b: 7}},
		{"  <idle>-0     (-------) [000] d..2.  5.000001: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=7 next_prio=120",
			true, traceEvent{us: 5_000_001, cpu: 0, kind: evSwitch, b: 7}},
		{"  bench-1 (    1) [000] ...1.  7.000000: tracing_mark_write: hsbench-kill 2 10 11",
			true, traceEvent{us: 7_000_000, tid: 1, tgid: 1, kind: evMarker, a: 2, b: 10, c: 11}},
		{"  bench-1 (    1) [000] ...1.  7.000000: tracing_mark_write: something else",
			true, traceEvent{us: 7_000_000, tid: 1, tgid: 1}},
		{"  bench-1 (    1) [000] ...1.  7.000000: tracing_mark_write: hsbench-kill 2 x 11", false, traceEvent{}},
		{"  c-5 (    5) [000] .....  7.000003: sched_process_exec: filename=/bin/x pid=5 old_pid=5",
			true, traceEvent{us: 7_000_003, tid: 5, tgid: 5, kind: evExec, a: 5}},
		{"  c-5 (    5) [000] .....  7.5: sched_process_exec: filename=/bin/x pid=5 old_pid=5", false, traceEvent{}},
		{"# entries-in-buffer/entries-written: 1/1", false, traceEvent{}},
		{"", false, traceEvent{}},
	}
	for _, tt := range tests {
		got, ok := parseTraceLine(tt.line)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseTraceLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPhasesOfARowWithNoWholeRestartIsNotMeasured(t *testing.T) {
	names := []string{"floor", "hermes-supervisor"}
	one := []phaseSample{{cpu: time.Microsecond}}
	if r := phasesOf(map[int][]phaseSample{0: one, 1: one}, names); r.skipped != "" || len(r.samples["hermes-supervisor"]) != 1 {
		t.Fatalf("both rows traced: %+v", r)
	}
	if r := phasesOf(map[int][]phaseSample{0: one}, names); !strings.Contains(r.skipped, "hermes-supervisor") {
		t.Fatalf("no restart of hermes-supervisor traced, yet skipped is %q", r.skipped)
	}
}
