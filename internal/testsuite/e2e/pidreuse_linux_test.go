package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv("E2E_BYSTANDER") == "1":
		pidns.Bystander()
	case len(os.Args) > 1 && os.Args[1] == demogateway.Command:
		os.Exit(demogateway.Main(os.Args[2:], os.Getenv, os.Stderr))
	}
	pidns.Main(m)
}

type bystanderProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	id    procstate.Identity
}

// startBystander starts an unrelated process at exactly pid, with argv
// extra appended (so it can look like a gateway, or not).
func startBystander(t *testing.T, pid int, extra ...string) *bystanderProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], extra...)
	cmd.Env = append(os.Environ(), "E2E_BYSTANDER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pidns.StartBystander(cmd, pid); err != nil {
		t.Fatalf("start bystander at pid %d: %v", pid, err)
	}
	id, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Inspect(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	return &bystanderProc{cmd: cmd, stdin: stdin, id: id}
}

// finish ends the bystander by closing its stdin and fails the test if it
// had been signalled, or was already dead.
func (b *bystanderProc) finish(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("bystander pid %d died during the test: %v", b.id.PID, err)
	}
	b.stdin.Close()
	err := b.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == pidns.Signalled {
		t.Fatalf("bystander pid %d was signalled", b.id.PID)
	}
	if err != nil {
		t.Fatalf("bystander pid %d: %v", b.id.PID, err)
	}
}

// staleRecord is what a gateway that died long ago left behind, naming pid.
func staleRecord(layout lockstore.Layout, pid int, start *int64) lockstore.Record {
	return lockstore.NewRecord(procstate.Identity{PID: pid, StartTime: start, Argv: []string{"/usr/local/bin/hermes", "gateway", "run"}}, layout.Home)
}

func TestStaleFilesNamingReusedPIDs(t *testing.T) {
	if !pidns.Available() {
		t.Skip(pidns.Why())
	}
	tests := []struct {
		name  string
		extra []string // the bystander's argv after the binary
		start func(b procstate.Identity) *int64
	}{
		{"unrelated process, other start time", []string{"bystander"}, func(b procstate.Identity) *int64 { v := *b.StartTime - 500; return &v }},
		{"unrelated process, start time unknown", []string{"bystander"}, func(procstate.Identity) *int64 { return nil }},
		{"gateway-looking process, other start time", []string{demogateway.Command, "-bystander"}, func(b procstate.Identity) *int64 { v := *b.StartTime - 500; return &v }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			layout := lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
			for _, d := range []string{layout.Home, layout.LockDir} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			pid := 4000 + 100*i
			b := startBystander(t, pid, tt.extra...)
			rec := staleRecord(layout, pid, tt.start(b.id))
			if err := lockstore.WriteExclusive(layout.PIDFile(), rec); err != nil {
				t.Fatal(err)
			}
			scoped := rec
			scoped.Scope = demogateway.Scope
			if err := lockstore.WriteExclusive(layout.ScopedLock(demogateway.Scope, "demo-token"), scoped); err != nil {
				t.Fatal(err)
			}
			env := []string{"HERMES_HOME=" + layout.Home, "HERMES_GATEWAY_LOCK_DIR=" + layout.LockDir}

			// Alone, a naive gateway flaps on these files.
			gw := exec.Command(os.Args[0], demogateway.Command, "-naive")
			gw.Env = append(os.Environ(), env...)
			if out, err := gw.CombinedOutput(); err == nil {
				t.Fatalf("the demo gateway started over stale files; want a refusal:\n%s", out)
			}

			states := make(chan *supervisor.Status, 256)
			sup, err := supervisor.New(supervisor.Config{
				Command:      []string{os.Args[0], demogateway.Command},
				Env:          env,
				Layout:       layout,
				Policy:       supervisor.DefaultPolicy(),
				StopTimeout:  10 * time.Second,
				ReadyTimeout: 30 * time.Second,
				OnTransition: func(s *supervisor.Status) { states <- s },
			}, zaptest.NewLogger(t), supervisor.SystemClock{}, procstate.NewProber(procstate.Options{StartTolerance: -1}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sup.Run(ctx) }()
			deadline := time.After(30 * time.Second)
		wait:
			for {
				select {
				case s := <-states:
					if s.State == supervisor.Backoff || s.State == supervisor.Failed {
						t.Fatalf("supervisor flapped: %s: %s", s.State, s.Reason)
					}
					if s.State == supervisor.Running && s.Child.Ready {
						if s.Child.PID == pid {
							t.Fatalf("child got the bystander's pid")
						}
						break wait
					}
				case <-deadline:
					t.Fatal("gateway never became ready")
				}
			}
			if r, err := lockstore.ReadRecord(layout.PIDFile()); err != nil || r.PID == pid {
				t.Fatalf("gateway.pid after start: %+v, %v", r, err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			b.finish(t)
		})
	}
}
