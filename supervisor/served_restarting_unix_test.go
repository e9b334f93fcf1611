//go:build unix

package supervisor

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// A served profile waits for the root's supervisor only while that
// supervisor can bring a server back. Two ways its state file says so
// falsely: the gateway it runs, which served the profile, still runs and
// has stopped listing it (nothing will come back: the profile stayed down
// until the root's gateway next restarted, reproduced with the real
// binary), and a supervisor stopped by SIGSTOP or Ctrl-Z, which restarts
// nothing until it gets SIGCONT (the profile stayed down, the handover
// grace ignored, for as long as it was stopped). Both now hand over after
// the grace; the server gone and its live supervisor still waits.
func TestServedWaitsOnlyForASupervisorBringingItBack(t *testing.T) {
	cases := []struct {
		name        string
		root        State // the root supervisor's state in its file
		serverRuns  bool  // the server still runs, no longer listing the profile
		rootStopped bool  // the root supervisor is stopped (SIGSTOP)
		want        State
	}{
		{"server runs, no longer serving it", Running, true, false, Backoff},
		{"server gone, its supervisor not yet told", Running, false, false, Served},
		{"server gone, its supervisor backing off", Backoff, false, false, Served},
		{"server gone, its supervisor stopped", Backoff, false, true, Backoff},
		{"server gone, its supervisor stopped before it was told", Running, false, true, Backoff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newProfileMachine(t)
			server := startSleeper(t)
			m.serving.Store(int64(server.Process.Pid))
			m.s.fire(onStartDue, "test")
			if m.s.state != Served {
				t.Fatalf("state %s before the server went, want served", m.s.state)
			}
			sup := startSleeper(t)
			m.writeRootState(c.root, sup, server)
			if !c.serverRuns {
				_ = server.Process.Kill()
				_ = server.Wait()
			}
			if c.rootStopped {
				stopAndWait(t, sup)
			}
			m.serving.Store(0)
			m.s.guard(m.s.loop)
			if m.s.state != c.want {
				t.Fatalf("state %s, want %s (reason %q)", m.s.state, c.want, m.s.reason)
			}
			if c.want == Backoff {
				if got := m.s.nextStart.Sub(m.clock.now); got != m.s.cfg.Policy.HandoverGrace {
					t.Fatalf("our own starts in %s, want the handover grace %s", got, m.s.cfg.Policy.HandoverGrace)
				}
			}
		})
	}
}

// startSleeper starts a process that runs until the test ends.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], demogateway.Command, "-sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// stopAndWait stops cmd with SIGSTOP and waits until the kernel says it is.
func stopAndWait(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("not stopped: %v, %v", ws, err)
	}
}

// writeRootState writes the root home's state file as its supervisor sup
// would in state, running gateway (whose identity it records).
func (m *profileMachine) writeRootState(state State, sup, gateway *exec.Cmd) {
	m.t.Helper()
	ctx := context.Background()
	self, err := m.s.prober.Inspect(ctx, sup.Process.Pid)
	if err != nil {
		m.t.Fatal(err)
	}
	gw, err := m.s.prober.Inspect(ctx, gateway.Process.Pid)
	if err != nil {
		m.t.Fatal(err)
	}
	st := &Status{State: state, Home: m.root()}
	if state == Running {
		st.Child = &Child{PID: gw.PID, StartTime: gw.StartTime, Argv: gateway.Args}
	}
	st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = self.PID, self.StartTime, sup.Args
	l := lockstore.Layout{Home: m.root(), LockDir: m.s.cfg.Layout.LockDir}
	if err := writeStatusFile(l.SupervisorState(), st, false); err != nil {
		m.t.Fatal(err)
	}
}
