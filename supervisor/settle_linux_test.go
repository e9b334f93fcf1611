package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestAGatewayDeadBeforeTheSettle: a gateway that exits in its first
// milliseconds, before the supervisor has read its identity or watched
// it, is still ours, unreaped, at the settle: its identity is read, its
// exit is seen with its code, and the policy applies (78: failed).
func TestAGatewayDeadBeforeTheSettle(t *testing.T) {
	dir := testdir.New(t)
	layout := lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
	for _, d := range []string{layout.Home, layout.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	states := make(chan *Status, 64)
	cfg := Config{
		Command: []string{"/bin/sh", "-c", "exit 78"}, Layout: layout, Policy: testPolicy(),
		StopTimeout: 10 * time.Second, ReadyTimeout: 30 * time.Second,
		OnTransition: func(s *Status) { states <- s },
	}
	s, err := New(cfg, zaptest.NewLogger(t), SystemClock{}, procstate.NewProber(procstate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	// Only a status request settles this start: the test says when.
	s.settleAfter = time.Hour
	pids := make(chan int, 1)
	s.spawn = func(c *Config, self procstate.Identity, log *zap.Logger, clock Clock) (spawned, error) {
		st, err := spawnChild(c, self, log, clock)
		if err == nil {
			pids <- st.pid()
		}
		return st, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var pid int
	select {
	case pid = <-pids:
	case <-time.After(30 * time.Second):
		t.Fatal("no gateway was started")
	}
	// Wait, by its pidfd, for it to have exited: a zombie only we can reap.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 30_000); n != 1 || err != nil {
		t.Fatalf("gateway %d did not exit: %d, %v", pid, n, err)
	}
	st := s.Do(ctx, "status").Status
	if st == nil || st.State != Starting || st.Child == nil || st.Child.PID != pid || st.Child.StartTime == nil {
		t.Fatalf("status after the settle: %+v", st)
	}
	for {
		select {
		case st := <-states:
			if st.State != Failed {
				continue
			}
			if st.LastExit == nil || st.LastExit.Code != ExitConfig || st.Restarts != 0 {
				t.Fatalf("failed with %+v, last exit %+v", st, st.LastExit)
			}
			return
		case <-time.After(30 * time.Second):
			t.Fatal("the exit before the settle was never seen")
		}
	}
}
