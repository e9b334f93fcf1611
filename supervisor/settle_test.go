package supervisor

import (
	"fmt"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestAStartSettlesBeforeAnythingElse: a start forks the gateway and leaves
// the rest (reading its output, its identity, its watch, the transition to
// Starting) for settle, settleAfter later; whatever reaches the machine
// before that finds the start settled, in order.
func TestAStartSettlesBeforeAnythingElse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first func(m *machine)
		then  State // the state once first is handled
	}{
		{"the settle's timer", func(m *machine) {
			// What Run does when the timer fires.
			m.s.timers.settle = nil
			m.s.settle()
		}, Starting},
		{"a status request", func(m *machine) {
			if st := m.s.statusNow(); st.State != Starting || st.Child == nil || st.Child.PID != fakePID {
				m.t.Errorf("status in the gateway's first milliseconds: %+v", st)
			}
		}, Starting},
		{"a stop command", func(m *machine) {
			m.s.handle(command{verb: "stop", reply: make(reply, 1)})
		}, Stopping},
		{"the supervisor's own stop", func(m *machine) { m.s.fire(onStop, "supervisor asked to stop") }, Stopping},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			core, logs := observer.New(zapcore.InfoLevel)
			m.s.log = zap.New(core)
			m.s.settleAfter = settleDelay
			m.s.fire(onStartDue, "test")
			g := m.gateway()
			if m.s.run != g || m.s.child != nil || m.s.state == Starting || g.reading || logs.Len() != 0 {
				t.Fatalf("before the settle: run %v, child %+v, state %s, reading %v, logged %d lines",
					m.s.run, m.s.child, m.s.state, g.reading, logs.Len())
			}
			if d := m.armed(m.s.timers.settle); d != settleDelay {
				t.Fatalf("settle armed for %s, want %s", d, settleDelay)
			}
			tc.first(m)
			if m.s.unsettled != nil || m.s.timers.settle != nil || !g.reading || m.s.child == nil || m.s.child.PID != fakePID {
				t.Fatalf("not settled: unsettled %v, timer %v, reading %v, child %+v", m.s.unsettled, m.s.timers.settle, g.reading, m.s.child)
			}
			if m.s.state != tc.then {
				t.Errorf("state %s, want %s", m.s.state, tc.then)
			}
			lines := logs.FilterMessage("state").All()
			if len(lines) == 0 || lines[0].ContextMap()["to"] != string(Starting) || lines[0].ContextMap()["pid"] != int64(fakePID) {
				t.Fatalf("the first transition logged is not to starting, for the gateway: %v", lines)
			}
			if len(m.spawns) != 1 {
				t.Errorf("%d spawns, want 1", len(m.spawns))
			}
			m.s.settle() // a second settle does nothing
			if n := len(logs.FilterMessage("state").All()); n != len(lines) {
				t.Errorf("a second settle logged %d more transitions", n-len(lines))
			}
		})
	}
}

// TestARestartLogsTheExitBeforeItsStart: the dead gateway's "gateway
// exited" line, held off the restart's path, is written at the settle,
// before the transition to starting of the gateway that replaced it.
func TestARestartLogsTheExitBeforeItsStart(t *testing.T) {
	m := newMachine(t)
	core, logs := observer.New(zapcore.InfoLevel)
	m.s.log, m.s.hold = HoldLines(zap.New(core))
	setup(m, "running")
	m.s.settleAfter = settleDelay
	before := logs.Len()
	m.exit(1)
	if len(m.spawns) != 2 || m.s.unsettled == nil {
		t.Fatalf("the exit did not restart at once: %d spawns, unsettled %v", len(m.spawns), m.s.unsettled)
	}
	if n := logs.Len() - before; n != 0 {
		t.Fatalf("%d lines written before the settle: %v", n, logs.All()[before:])
	}
	m.s.settle()
	var got []string
	for _, e := range logs.All()[before:] {
		got = append(got, e.Message+" "+fmt.Sprint(e.ContextMap()["to"]))
	}
	want := []string{"gateway exited <nil>", "state starting"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines after the exit: %q, want %q", got, want)
	}
}
