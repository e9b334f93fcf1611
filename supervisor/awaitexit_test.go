package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestAwaitSupervisorExit waits on a sentinel standing in for a supervisor
// that has answered a stop, which records every signal it gets: the wait
// lasts while it runs, ends once it has exited on its own, and ends at once
// when the answer's pid names another process (another start time or
// command line, init, none). It never signals the process it waits on.
func TestAwaitSupervisorExit(t *testing.T) {
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	statusOf := func(id procstate.Identity) *Status {
		st := &Status{}
		st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = id.PID, id.StartTime, id.Argv
		return st
	}

	t.Run("waits while it runs, returns once it exits", func(t *testing.T) {
		sn := startHermesSentinel(t, testdir.New(t), prober)
		st := statusOf(sn.id)
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
		sn.end(t) // exits on its own, never signalled
		if err := <-done; err != nil {
			t.Fatalf("once it exited: %v, want nil", err)
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
			sn := startHermesSentinel(t, testdir.New(t), prober)
			st := statusOf(sn.id)
			tt.alter(st)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := AwaitSupervisorExit(ctx, st); err != nil {
				t.Fatalf("%v, want nil at once: that pid is not the supervisor's", err)
			}
			sn.end(t)
		})
	}
	if err := AwaitSupervisorExit(context.Background(), nil); err != nil {
		t.Errorf("no status: %v, want nil", err)
	}
}
