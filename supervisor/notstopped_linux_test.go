package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// NotStopped makes stop and restart refuse, sending nothing, when the
// state file's supervisor is stopped (Ctrl-Z). It must believe that only
// of the live process the file names by pid, start time and exact command
// line, stopped now: a stale, forged, symlinked or huge file, or a stopped
// process that is not the one named, lets the request go as before, and a
// running one is no refusal.
func TestNotStoppedBelievesOnlyTheStoppedSupervisor(t *testing.T) {
	stopped := exec.Command("sleep", "1000")
	running := exec.Command("sleep", "1000")
	for _, c := range []*exec.Cmd{stopped, running} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	stoppedID := inspectSettled(t, stopped.Process.Pid)
	runningID := inspectSettled(t, running.Process.Pid)
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The stop, as an event: wait4 returns once the child is stopped.
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(stopped.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("sleep did not stop: %v, %v", ws, err)
	}

	named := func(pid int, start *int64, argv []string) func(t *testing.T, l lockstore.Layout) {
		return func(t *testing.T, l lockstore.Layout) {
			st := &Status{State: Running}
			st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = pid, start, argv
			writeState(t, l, st)
		}
	}
	later := *stoppedID.StartTime + 100
	for _, tc := range []struct {
		name   string
		write  func(t *testing.T, l lockstore.Layout)
		refuse bool
	}{
		{"the stopped supervisor itself", named(stoppedID.PID, stoppedID.StartTime, stoppedID.Argv), true},
		{"its pid, another start time (reused)", named(stoppedID.PID, &later, stoppedID.Argv), false},
		{"its pid and start, another command line", named(stoppedID.PID, stoppedID.StartTime, []string{"hermes-supervisor", "run"}), false},
		{"a running process", named(runningID.PID, runningID.StartTime, runningID.Argv), false},
		{"no state file", func(*testing.T, lockstore.Layout) {}, false},
		{"a link to a file naming it", func(t *testing.T, l lockstore.Layout) {
			other := lockstore.Layout{Home: testdir.New(t)}
			named(stoppedID.PID, stoppedID.StartTime, stoppedID.Argv)(t, other)
			if err := os.Symlink(other.SupervisorState(), l.SupervisorState()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a huge file naming it", func(t *testing.T, l lockstore.Layout) {
			named(stoppedID.PID, stoppedID.StartTime, stoppedID.Argv)(t, l)
			b, err := os.ReadFile(l.SupervisorState())
			if err != nil {
				t.Fatal(err)
			}
			pad := `{"pad":"` + strings.Repeat("x", maxStatusFile) + `",` + string(b[1:])
			if err := os.WriteFile(l.SupervisorState(), []byte(pad), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a FIFO", func(t *testing.T, l lockstore.Layout) {
			if err := syscall.Mkfifo(l.SupervisorState(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lockstore.Layout{Home: testdir.New(t)}
			tc.write(t, l)
			err := NotStopped(context.Background(), l)
			if got := errors.Is(err, ErrSupervisorStopped); got != tc.refuse {
				t.Fatalf("NotStopped = %v, want refusal %v (state file %s)", err, tc.refuse, filepath.Base(l.SupervisorState()))
			}
		})
	}
}
