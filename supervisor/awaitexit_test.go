package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestAwaitSupervisorExit waits on a real process standing in for a
// supervisor that has answered a stop: not while it runs, and at once
// when it has exited or its pid names another process.
func TestAwaitSupervisorExit(t *testing.T) {
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	// start runs a demo gateway and returns it with the status a
	// supervisor of its identity would answer.
	start := func(t *testing.T) (*exec.Cmd, *Status) {
		t.Helper()
		home := testdir.New(t)
		cmd := exec.Command(os.Args[0], demogateway.Command, "-home", home, "-lock-dir", filepath.Join(home, "locks"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// Its pid file is written after exec: the identity read then is
		// the one it keeps.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := lockstore.ReadRecord(filepath.Join(home, "gateway.pid")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the stand-in never wrote its gateway.pid")
			}
		}
		id, err := prober.Inspect(context.Background(), cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		st := &Status{}
		st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = id.PID, id.StartTime, id.Argv
		return cmd, st
	}

	t.Run("waits while it runs, returns once it exits", func(t *testing.T) {
		cmd, st := start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := AwaitSupervisorExit(ctx, st); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("while it runs: %v, want the deadline", err)
		}
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done <- AwaitSupervisorExit(ctx, st)
		}()
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("once it was killed: %v, want nil", err)
		}
	})

	others := []struct {
		name  string
		alter func(st *Status)
	}{
		{"another start time", func(st *Status) { s := *st.Supervisor.StartTime + 1000; st.Supervisor.StartTime = &s }},
		{"another command line", func(st *Status) { st.Supervisor.Argv = []string{"hermes-supervisor", "run"} }},
		{"no pid", func(st *Status) { st.Supervisor.PID = 0 }},
		// A supervisor that is init of its own PID namespace names pid 1,
		// which is another process here (or this namespace's init).
		{"init", func(st *Status) { st.Supervisor.PID = 1 }},
	}
	for _, tt := range others {
		t.Run("its pid names "+tt.name, func(t *testing.T) {
			_, st := start(t)
			tt.alter(st)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := AwaitSupervisorExit(ctx, st); err != nil {
				t.Fatalf("%v, want nil at once: that pid is not the supervisor's", err)
			}
		})
	}
	if err := AwaitSupervisorExit(context.Background(), nil); err != nil {
		t.Errorf("no status: %v, want nil", err)
	}
}
