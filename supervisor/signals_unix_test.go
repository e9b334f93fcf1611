//go:build unix

package supervisor

import (
	"syscall"
	"testing"
	"time"
)

// killedHard reports whether e is how killHard's SIGKILL looks.
func killedHard(e Exit) bool { return e.Signal == "SIGKILL" }

func TestExit75RestartsAtOnce(t *testing.T) {
	p := testPolicy()
	p.MinUptime = time.Millisecond
	h := startHarness(t, p)
	first := h.waitReady()
	if err := syscall.Kill(first.Child.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor("restart after exit 75", func(s *Status) bool {
		if s.State == Backoff {
			t.Fatalf("exit 75 went through backoff: %s", s.Reason)
		}
		return s.State == Running && s.Child != nil && s.Child.Ready
	})
	if next.LastExit == nil || next.LastExit.Code != ExitRestart || next.Restarts != 1 || next.Child.PID == first.Child.PID {
		t.Fatalf("after exit 75: %+v, last exit %+v", next, next.LastExit)
	}
}
