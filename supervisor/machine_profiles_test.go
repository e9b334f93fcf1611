package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// profileMachine is a machine for the named profile work, whose server
// the test decides: serving names the pid that serves it, 0 for none.
type profileMachine struct {
	*machine
	serving atomic.Int64 // read by the server watch's goroutine too
}

func newProfileMachine(t *testing.T) *profileMachine {
	m := newMachine(t)
	home := filepath.Join(filepath.Dir(m.s.cfg.Layout.Home), "root", "profiles", "work")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	m.s.cfg.Layout.Home = home
	m.s.profile, m.s.named = "work", true
	pm := &profileMachine{machine: m}
	m.s.look = func(context.Context) (*ServedBy, string) {
		if pm.serving.Load() == 0 {
			return nil, "nobody serves it"
		}
		return &ServedBy{PID: int(pm.serving.Load()), Home: pm.root(), Via: "test"}, ""
	}
	return pm
}

func (m *profileMachine) exitSaying(code int, said string) {
	m.s.handle(exited{run: m.s.run, exit: Exit{Code: code, At: m.clock.now, said: []byte(said)}})
}

func (m *profileMachine) touch(path string) {
	m.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("deleted\n"), 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// root is the root home of the profile's home.
func (m *profileMachine) root() string {
	return filepath.Dir(filepath.Dir(m.s.cfg.Layout.Home))
}

// supervisedRoot writes the root home's state file as a supervisor in
// state would, running gateway (0: none), naming a live process as that
// supervisor.
func (m *profileMachine) supervisedRoot(state State, gateway int) {
	m.t.Helper()
	cmd := exec.Command(os.Args[0], demogateway.Command, "-sleep")
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id, err := m.s.prober.Inspect(context.Background(), cmd.Process.Pid)
	if err != nil {
		m.t.Fatal(err)
	}
	st := &Status{State: state, Home: m.root()}
	if gateway != 0 {
		st.Child = &Child{PID: gateway}
	}
	st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = id.PID, id.StartTime, cmd.Args
	l := lockstore.Layout{Home: m.root(), LockDir: m.s.cfg.Layout.LockDir}
	if err := writeStatusFile(l.SupervisorState(), st, false); err != nil {
		m.t.Fatal(err)
	}
}

func (m *profileMachine) tombstone() string { return lockstore.ProfileTombstone(m.s.cfg.Layout.Home) }
func (m *profileMachine) parkedFile() string {
	return filepath.Join(m.s.cfg.Layout.Home, ParkedFile)
}

// TestMachineProfiles drives every transition of served, parked and
// deleted profiles, and the retry without --external-supervisor, with a
// fake spawn, a fake server and real marker files.
func TestMachineProfiles(t *testing.T) {
	const refusal = "The default gateway is running as a profile multiplexer and already serves profile 'work'.\n"
	type want struct {
		state  State
		intent intent
		spawns int
		terms  int
		served int  // the serving pid status shows; 0: none
		guard  bool // the guard timer is armed
		wait   bool // a backoff timer is armed
	}
	cases := []struct {
		name  string
		setup func(m *profileMachine)
		want  want
	}{
		{"stopped/start due, served", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
		}, want{state: Served, served: 4242, guard: true}},
		{"served/server gone", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.guard(m.s.loop)
		}, want{state: Backoff, wait: true, guard: true}},
		{"served/server gone, backoff over", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.guard(m.s.loop)
			m.s.fire(onStartDue, "backoff over")
		}, want{state: Starting, spawns: 1, guard: true}},
		{"served/server's exit seen", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.handle(serverExited{gen: m.s.watchGen})
		}, want{state: Backoff, wait: true, guard: true}},
		{"served/stale server exit event", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.handle(serverExited{gen: m.s.watchGen - 1})
		}, want{state: Served, served: 4242, guard: true}},
		{"served/another server", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(4343)
			m.s.guard(m.s.loop)
		}, want{state: Served, served: 4343, guard: true}},
		{"served/server gone, the grace not over", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.guard(m.s.loop)
			if got := m.s.nextStart.Sub(m.clock.now); got != m.s.cfg.Policy.HandoverGrace {
				m.t.Errorf("our own starts in %s, want the handover grace, %s", got, m.s.cfg.Policy.HandoverGrace)
			}
		}, want{state: Backoff, wait: true, guard: true}},
		{"served/server gone, back within the grace", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.serving.Store(0)
			m.s.guard(m.s.loop)
			m.serving.Store(4343)
			m.s.guard(m.s.loop)
		}, want{state: Served, served: 4343, guard: true}},
		{"served/server gone, its home's supervisor restarts it", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.supervisedRoot(Backoff, 0)
			m.serving.Store(0)
			m.s.guard(m.s.loop)
			m.s.guard(m.s.loop) // a second look says nothing new
			m.s.guard(m.s.loop)
			if m.s.timers.guardEvery != servedCheckMin {
				m.t.Errorf("waiting for the server's supervisor, the next look is in %s, want every %s", m.s.timers.guardEvery, servedCheckMin)
			}
		}, want{state: Served, served: 4242, guard: true}},
		{"served/server gone, its home's supervisor not yet told", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.supervisedRoot(Running, 4242)
			m.serving.Store(0)
			m.s.guard(m.s.loop)
		}, want{state: Served, served: 4242, guard: true}},
		{"served/server gone, its home's supervisor runs one that does not serve it", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.supervisedRoot(Running, 4343)
			m.serving.Store(0)
			m.s.guard(m.s.loop)
		}, want{state: Backoff, wait: true, guard: true}},
		{"served/server gone, its home's supervisor stopped", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.supervisedRoot(Stopped, 0)
			m.serving.Store(0)
			m.s.guard(m.s.loop)
		}, want{state: Backoff, wait: true, guard: true}},
		{"served/still served", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.s.guard(m.s.loop)
		}, want{state: Served, served: 4242, guard: true}},
		{"served/stop", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.s.fire(onStop, "test")
		}, want{state: Stopped, intent: exitNext}},
		{"served/restart", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.s.fire(onRestart, "test")
		}, want{state: Served, served: 4242, guard: true}},
		{"running/exit 78 with the multiplexer's refusal", func(m *profileMachine) {
			setup(m.machine, "running")
			m.serving.Store(4242)
			m.exitSaying(ExitConfig, refusal)
		}, want{state: Served, spawns: 1, served: 4242, guard: true}},
		{"running/exit 75, attached to the host gateway", func(m *profileMachine) {
			setup(m.machine, "running")
			m.serving.Store(4242)
			m.exitSaying(ExitRestart, "✓ The host gateway already serves profile 'work' — nothing to start.\n")
		}, want{state: Served, spawns: 1, served: 4242, guard: true}},
		{"running/exit 75, nobody serves it", func(m *profileMachine) {
			setup(m.machine, "running")
			m.clock.now = m.clock.now.Add(time.Minute)
			m.exitSaying(ExitRestart, "")
		}, want{state: Starting, spawns: 2}},
		{"running/exit 78 with the refusal, no server proven", func(m *profileMachine) {
			setup(m.machine, "running")
			m.exitSaying(ExitConfig, refusal)
		}, want{state: Starting, spawns: 2}},
		{"running/exit 78 refusing another profile", func(m *profileMachine) {
			setup(m.machine, "running")
			m.serving.Store(4242)
			m.exitSaying(ExitConfig, "The default gateway is running as a profile multiplexer and already serves profile 'coder'.\n")
		}, want{state: Failed, spawns: 1}},
		{"stopped/start due, parked", func(m *profileMachine) {
			m.touch(m.parkedFile())
			m.s.fire(onStartDue, "test")
		}, want{state: Parked, guard: true}},
		{"parked/still parked", func(m *profileMachine) {
			m.touch(m.parkedFile())
			m.s.fire(onStartDue, "test")
			m.s.guard(m.s.loop)
		}, want{state: Parked, guard: true}},
		{"parked/unparked", func(m *profileMachine) {
			m.touch(m.parkedFile())
			m.s.fire(onStartDue, "test")
			os.Remove(m.parkedFile())
			m.s.guard(m.s.loop)
		}, want{state: Starting, spawns: 1, guard: true}},
		{"parked/stop", func(m *profileMachine) {
			m.touch(m.parkedFile())
			m.s.fire(onStartDue, "test")
			m.s.fire(onStop, "test")
		}, want{state: Stopped, intent: exitNext}},
		{"stopped/start due, deleted", func(m *profileMachine) {
			m.touch(m.tombstone())
			m.s.fire(onStartDue, "test")
		}, want{state: Stopped, intent: exitNext}},
		{"running/deleted", func(m *profileMachine) {
			setup(m.machine, "running")
			m.touch(m.tombstone())
			m.s.guard(m.s.loop)
		}, want{state: Stopping, intent: exitNext, spawns: 1, terms: 1}},
		{"running/deleted, then exit", func(m *profileMachine) {
			setup(m.machine, "running")
			m.touch(m.tombstone())
			m.s.guard(m.s.loop)
			m.exitSaying(0, "")
		}, want{state: Stopped, intent: exitNext, spawns: 1, terms: 1}},
		{"served/deleted", func(m *profileMachine) {
			m.serving.Store(4242)
			m.s.fire(onStartDue, "test")
			m.touch(m.tombstone())
			m.s.guard(m.s.loop)
		}, want{state: Stopped, intent: exitNext}},
		{"backoff/deleted", func(m *profileMachine) {
			m.s.scheduleStart(time.Second, "test")
			m.touch(m.tombstone())
			m.s.guard(m.s.loop)
		}, want{state: Stopped, intent: exitNext}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newProfileMachine(t)
			c.setup(m)
			got := want{state: m.s.state, intent: m.s.intent, spawns: len(m.spawns), guard: m.s.timers.guard != nil, wait: m.s.timers.backoff != nil}
			if len(m.spawns) > 0 {
				got.terms = m.gateway().terms
			}
			if sb := m.s.snapshot().ServedBy; sb != nil {
				got.served = sb.PID
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v (reason %q)", got, c.want, m.s.reason)
			}
		})
	}
}

// An argparse refusal of --external-supervisor is retried at once without
// the flag, is no crash, and status says so; the same exit without the
// flag on the command line is an ordinary failure.
func TestMachineExternalSupervisorRejected(t *testing.T) {
	m := newMachine(t)
	m.s.cfg.Command = []string{"hermes", "gateway", "run", ExternalSupervisorFlag}
	m.s.cfg.ExternalSupervisor = &ExtSup{Passed: true, Why: "passed"}
	setup(m, "running")
	m.s.handle(exited{run: m.s.run, exit: Exit{Code: 2, At: m.clock.now,
		said: []byte("usage: hermes [-h]\nhermes: error: unrecognized arguments: --external-supervisor\n")}})
	if m.s.state != Starting || len(m.spawns) != 2 || m.s.hist.Streak != 0 {
		t.Fatalf("state %s, %d spawns, streak %d: want a new start at once, uncounted", m.s.state, len(m.spawns), m.s.hist.Streak)
	}
	if want := []string{"hermes", "gateway", "run"}; !slices.Equal(m.s.cfg.Command, want) {
		t.Fatalf("command %q, want %q", m.s.cfg.Command, want)
	}
	if e := m.s.snapshot().ExternalSupervisor; e == nil || e.Passed || e.Why == "" {
		t.Fatalf("status says %+v of --external-supervisor", e)
	}
	// Without the flag, exit 2 is a crash like any other.
	m.s.handle(exited{run: m.s.run, exit: Exit{Code: 2, At: m.clock.now, said: []byte("unrecognized arguments: --external-supervisor")}})
	if m.s.hist.Streak != 1 {
		t.Fatalf("streak %d after an exit 2 without the flag, want 1", m.s.hist.Streak)
	}
}
