package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// fakeGateway is a spawned gateway that is no process: it records what the
// supervisor asks of it, and exits only when the test says.
type fakeGateway struct {
	begun        time.Time
	terms, kills int
	left         []proctree.Unkilled
	out          *outputPipes // the output pipes it was given, closed
	reading      bool         // begin was called
}

// fakePID names no process: above every kernel's pid_max.
const fakePID = 1 << 30

func (g *fakeGateway) Terminate() error               { g.terms++; return nil }
func (g *fakeGateway) Kill() error                    { g.kills++; return nil }
func (g *fakeGateway) wait(ctx context.Context) Exit  { <-ctx.Done(); return Exit{} }
func (g *fakeGateway) survivors() []proctree.Unkilled { return g.left }
func (g *fakeGateway) pid() int                       { return fakePID }
func (g *fakeGateway) startedAt() time.Time           { return g.begun }
func (g *fakeGateway) cgroup() string                 { return "" }
func (g *fakeGateway) begin()                         { g.reading = true }

// machine is a supervisor whose loop the test plays: it fires triggers and
// hands in events as Run would, with a fake spawn and a test clock.
type machine struct {
	t      *testing.T
	s      *Supervisor
	clock  *testClock
	spawns []*fakeGateway
}

func newMachine(t *testing.T) *machine {
	dir := testdir.New(t)
	layout := lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
	for _, d := range []string{layout.Home, layout.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	m := &machine{t: t, clock: &testClock{now: time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)}}
	cfg := Config{
		Command: []string{"fake-gateway"}, Layout: layout, Policy: testPolicy(),
		StopTimeout: 10 * time.Second, MaxStopExtension: time.Minute, ReadyTimeout: 30 * time.Second, Watchdog: WatchdogOff,
	}
	s, err := New(cfg, zaptest.NewLogger(t), m.clock, procstate.NewProber(procstate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		s.wd.close(nil)
		s.wd.dropSpare()
		s.spareOut.close()
	})
	s.loop = ctx
	// The test plays the loop: each start settles at once.
	s.settleAfter = 0
	s.spawn = func(c *Config, _ procstate.Identity, _ *zap.Logger, _ Clock) (spawned, error) {
		c.out.close() // a real spawn hands them to the gateway
		g := &fakeGateway{begun: m.clock.now, out: c.out}
		m.spawns = append(m.spawns, g)
		return g, nil
	}
	m.s = s
	return m
}

// gateway is the last gateway spawned.
func (m *machine) gateway() *fakeGateway {
	if len(m.spawns) == 0 {
		m.t.Fatal("no gateway was spawned")
	}
	return m.spawns[len(m.spawns)-1]
}

func (m *machine) exit(code int) {
	m.s.handle(exited{run: m.s.run, exit: Exit{Code: code, At: m.clock.now}})
}

func (m *machine) armed(t Timer) time.Duration {
	if t == nil {
		return 0
	}
	return t.(*testTimer).d
}

// setup drives the real machine, by its own triggers and events, to the
// (state, intent) named.
func setup(m *machine, name string) {
	switch name {
	case "stopped":
	case "starting":
		m.s.fire(onStartDue, "test")
	case "running":
		setup(m, "starting")
		m.s.markReady("test")
	case "backoff":
		m.s.scheduleStart(time.Second, "test")
	case "failed":
		setup(m, "running")
		m.exit(ExitConfig)
	case "stopping to exit":
		setup(m, "running")
		m.s.fire(onStop, "test")
	case "stopping to restart":
		setup(m, "running")
		m.s.fire(onRestart, "test")
	case "hang takedown":
		setup(m, "running")
		m.s.hangDetected("test")
	case "killed to exit":
		setup(m, "stopping to exit")
		m.s.fire(onKillDue, "test")
	default:
		m.t.Fatalf("no setup %q", name)
	}
}

func TestMachine(t *testing.T) {
	type want struct {
		state  State
		intent intent
		spawns int           // gateways spawned in all
		terms  int           // SIGTERMs the last gateway got
		kills  int           // kills of its tree
		dead   time.Duration // what the deadline is armed for; 0: none
		wait   bool          // a backoff timer is armed
	}
	cases := []struct {
		from  string
		setup want // where the setup must have left the machine
		on    string
		do    func(m *machine)
		want  want
	}{
		{"stopped", want{state: Stopped}, "start due", func(m *machine) { m.s.fire(onStartDue, "test") },
			want{state: Starting, spawns: 1}},
		{"starting", want{state: Starting, spawns: 1}, "ready", func(m *machine) { m.s.markReady("test") },
			want{state: Running, spawns: 1}},
		{"running", want{state: Running, spawns: 1}, "ready again", func(m *machine) { m.s.fire(onReady, "test") },
			want{state: Running, spawns: 1}},
		{"starting", want{state: Starting, spawns: 1}, "stop", func(m *machine) { m.s.fire(onStop, "test") },
			want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"running", want{state: Running, spawns: 1}, "stop", func(m *machine) { m.s.fire(onStop, "test") },
			want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"running", want{state: Running, spawns: 1}, "restart", func(m *machine) { m.s.fire(onRestart, "test") },
			want{state: Stopping, intent: restartNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"running", want{state: Running, spawns: 1}, "hang", func(m *machine) { m.s.hangDetected("test") },
			want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, dead: hangKillGrace}},
		{"running", want{state: Running, spawns: 1}, "exit 75", func(m *machine) { m.exit(ExitRestart) },
			want{state: Starting, spawns: 2}},
		{"running", want{state: Running, spawns: 1}, "crash", func(m *machine) { m.exit(1) },
			want{state: Starting, spawns: 2}},
		{"running", want{state: Running, spawns: 1}, "second crash", func(m *machine) { m.exit(1); m.exit(1) },
			want{state: Backoff, spawns: 2, wait: true}},
		{"running", want{state: Running, spawns: 1}, "exit 78", func(m *machine) { m.exit(ExitConfig) },
			want{state: Failed, spawns: 1}},
		{"backoff", want{state: Backoff, wait: true}, "start due", func(m *machine) { m.s.fire(onStartDue, "test") },
			want{state: Starting, spawns: 1}},
		{"backoff", want{state: Backoff, wait: true}, "stop", func(m *machine) { m.s.fire(onStop, "test") },
			want{state: Stopped, intent: exitNext}},
		{"backoff", want{state: Backoff, wait: true}, "restart", func(m *machine) { m.s.fire(onRestart, "test") },
			want{state: Starting, spawns: 1}},
		{"failed", want{state: Failed, spawns: 1}, "restart", func(m *machine) { m.s.fire(onRestart, "test") },
			want{state: Starting, spawns: 2}},
		{"failed", want{state: Failed, spawns: 1}, "stop", func(m *machine) { m.s.fire(onStop, "test") },
			want{state: Stopped, intent: exitNext, spawns: 1}},
		{"stopping to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "exit",
			func(m *machine) { m.exit(0) }, want{state: Stopped, intent: exitNext, spawns: 1, terms: 1}},
		{"stopping to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "restart",
			func(m *machine) { m.s.fire(onRestart, "test") }, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"stopping to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "hang",
			func(m *machine) { m.s.fire(onHung, "test") }, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"stopping to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "deadline",
			func(m *machine) { m.s.fire(onKillDue, "test") }, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, kills: 1, dead: KillGrace}},
		{"stopping to restart", want{state: Stopping, intent: restartNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "exit",
			func(m *machine) { m.exit(0) }, want{state: Starting, spawns: 2}},
		{"stopping to restart", want{state: Stopping, intent: restartNext, spawns: 1, terms: 1, dead: 10 * time.Second}, "stop",
			func(m *machine) { m.s.fire(onStop, "test") }, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: 10 * time.Second}},
		{"hang takedown", want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, dead: hangKillGrace}, "deadline",
			func(m *machine) { m.s.fire(onKillDue, "test") }, want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, kills: 1, dead: KillGrace}},
		{"hang takedown", want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, dead: hangKillGrace}, "exit",
			func(m *machine) { m.exit(-1) }, want{state: Starting, spawns: 2}},
		{"hang takedown", want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, dead: hangKillGrace}, "restart",
			func(m *machine) { m.s.fire(onRestart, "test") }, want{state: Stopping, intent: restartNext, spawns: 1, terms: 1, dead: hangKillGrace}},
		{"hang takedown", want{state: Stopping, intent: hangTakedown, spawns: 1, terms: 1, dead: hangKillGrace}, "stop",
			func(m *machine) { m.s.fire(onStop, "test") }, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, dead: hangKillGrace}},
		{"killed to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, kills: 1, dead: KillGrace}, "grace over",
			func(m *machine) { m.s.fire(onGraceOver, "test") }, want{state: Stopped, intent: exitNext, spawns: 1, terms: 1, kills: 1}},
		{"killed to exit", want{state: Stopping, intent: exitNext, spawns: 1, terms: 1, kills: 1, dead: KillGrace}, "exit",
			func(m *machine) { m.exit(-1) }, want{state: Stopped, intent: exitNext, spawns: 1, terms: 1, kills: 1}},
	}
	check := func(t *testing.T, m *machine, when string, w want) {
		t.Helper()
		got := want{state: m.s.state, intent: m.s.intent, spawns: len(m.spawns), dead: m.armed(m.s.deadline), wait: m.s.timers.backoff != nil}
		if len(m.spawns) > 0 {
			got.terms, got.kills = m.gateway().terms, m.gateway().kills
		}
		if got != w {
			t.Fatalf("%s: got %+v, want %+v", when, got, w)
		}
		if (m.s.nextStart != nil) != w.wait {
			t.Fatalf("%s: next start %v with a backoff timer %v", when, m.s.nextStart, w.wait)
		}
	}
	for _, c := range cases {
		t.Run(c.from+"/"+c.on, func(t *testing.T) {
			m := newMachine(t)
			setup(m, c.from)
			check(t, m, "after the setup", c.setup)
			c.do(m)
			check(t, m, "after "+c.on, c.want)
		})
	}
}

// A stop's deadline grows with the gateway's EXTEND_TIMEOUT_USEC up to its
// ceiling, and a hang takedown's does not grow at all.
func TestMachineStopExtension(t *testing.T) {
	m := newMachine(t)
	setup(m, "stopping to exit")
	d := 30 * time.Second
	m.s.heed(watchAction{extend: &d})
	if got := m.armed(m.s.deadline); got != d {
		t.Fatalf("extended deadline armed for %s, want %s", got, d)
	}
	d = time.Hour
	m.s.heed(watchAction{extend: &d})
	if got, ceiling := m.armed(m.s.deadline), 10*time.Second+time.Minute; got != ceiling {
		t.Fatalf("deadline armed for %s, want the ceiling %s", got, ceiling)
	}

	m = newMachine(t)
	setup(m, "hang takedown")
	m.s.heed(watchAction{extend: &d})
	if got := m.armed(m.s.deadline); got != hangKillGrace {
		t.Fatalf("a hang takedown's deadline armed for %s, want %s", got, hangKillGrace)
	}
}

// A restart's output pipes were made while the gateway before it ran
// (housekeep), so the path from an exit to the next fork makes none; the
// first start, with nothing made yet, makes its own in startChild.
func TestARestartTakesThePipesMadeWhileTheLastRan(t *testing.T) {
	m := newMachine(t)
	setup(m, "running")
	if m.gateway().out != nil {
		t.Fatal("the first start was given pipes: none were made before it")
	}
	spare := m.s.spareOut
	if spare == nil {
		t.Fatal("no output pipes were made for the next start once the gateway was ready")
	}
	m.exit(1)
	if got := m.gateway().out; got != spare {
		t.Fatalf("the restart was given %p, not the pipes made while the last gateway ran (%p)", got, spare)
	}
	if m.s.spareOut != nil {
		t.Fatal("the pipes given to the restart are still kept as the spare")
	}
}

// A client that waits on a stop (stop, restart) reads when it ends from
// the status (StopEndsBy): in every phase of a stop the supervisor still
// works on, that must be no earlier than the end its own deadlines give,
// the kill grace after a kill included. A client that read "no stop
// pending" there would give up while the stop goes on.
func TestStopEndsByCoversEveryPhaseOfAStop(t *testing.T) {
	extend := func(m *machine) {
		d := 30 * time.Second
		m.s.heed(watchAction{extend: &d})
	}
	kill := func(m *machine) { m.s.fire(onKillDue, "test") }
	for _, tc := range []struct {
		setup string
		then  []func(*machine)
	}{
		{setup: "stopping to exit"},
		{setup: "stopping to restart"},
		{setup: "stopping to exit", then: []func(*machine){extend}},
		{setup: "killed to exit"},
		{setup: "stopping to exit", then: []func(*machine){extend, kill}},
		{setup: "hang takedown"},
		{setup: "hang takedown", then: []func(*machine){kill}},
	} {
		name := tc.setup
		if len(tc.then) > 0 {
			name += fmt.Sprintf(" then %d steps", len(tc.then))
		}
		t.Run(name, func(t *testing.T) {
			m := newMachine(t)
			setup(m, tc.setup)
			for _, f := range tc.then {
				f(m)
			}
			if m.s.deadline == nil {
				t.Fatal("no deadline armed: not a stop in progress")
			}
			// The supervisor's own latest end: its deadline, and the kill
			// grace after it unless that deadline is the grace itself.
			latest := m.s.deadline.(*testTimer).at
			if !m.s.stop.killed {
				latest = latest.Add(KillGrace)
			}
			// As a client reads it: through JSON.
			b, err := json.Marshal(m.s.snapshot())
			if err != nil {
				t.Fatal(err)
			}
			var st Status
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			end, ok := st.StopEndsBy()
			if !ok || end.Before(latest) {
				t.Errorf("StopEndsBy() = %s, %v; the stop may go on until %s", end, ok, latest)
			}
		})
	}
}
