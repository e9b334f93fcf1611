package supervisor

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestAGatewayDeadBeforeTheSettle: a gateway that exits in its first
// milliseconds, before the supervisor has read its identity or watched
// it, is still ours, unreaped, at the settle: its identity is read, its
// exit is seen with its code, and the policy applies (78: failed).
func TestAGatewayDeadBeforeTheSettle(t *testing.T) {
	h := newHome(t)
	pids := make(chan int, 1)
	h.prepare = func(s *Supervisor) {
		// Only a status request settles this start: the test says when.
		s.settleAfter = time.Hour
		s.spawn = func(c *Config, self procstate.Identity, log *zap.Logger, clock Clock) (spawned, error) {
			st, err := spawnChild(c, self, log, clock)
			if err == nil {
				pids <- st.pid()
			}
			return st, err
		}
	}
	h.run(func(c *Config) { c.Command = []string{"/bin/sh", "-c", "exit 78"} })

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
	st := h.sup.Do(t.Context(), "status").Status
	if st == nil || st.State != Starting || st.Child == nil || st.Child.PID != pid || st.Child.StartTime == nil {
		t.Fatalf("status after the settle: %+v", st)
	}
	st = h.waitState(Failed)
	if st.LastExit == nil || st.LastExit.Code != ExitConfig || st.Restarts != 0 {
		t.Fatalf("failed with %+v, last exit %+v", st, st.LastExit)
	}
}
