package chaos

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestSecondSupervisorAfterLockUnlinked is the attack of a process of the
// user (logind's cleanup, the gateway itself) that unlinks the home's
// socket and supervisor lock under a live supervisor A, then starts
// supervisor B on the same home. B's flock on the new inode succeeds, but
// A's state file names A alive: B must refuse in one line naming A's pid,
// exit 1 as for a held home, and leave A's gateway alone (it used to
// reclaim it: SIGTERM, a restart by A, and two supervisors on one home).
// A, at its next state write, takes the lock at the path back.
func TestSecondSupervisorAfterLockUnlinked(t *testing.T) {
	h := newHome(t, "")
	args := []string{"run", "--", bin, demogateway.Command}
	supA := h.start(t, args...)
	gwA := h.waitHealthy(t, supA, 0).Child.PID
	pidA := supA.cmd.Process.Pid
	for _, p := range []string{ctlsock.Address(h.Home), h.SupervisorLock()} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	supB := h.start(t, args...)
	if code := supB.exited(t, 20*time.Second); code != 1 {
		t.Fatalf("second supervisor exited %d, want 1:\n%s", code, supB.out)
	}
	out := supB.out.String()
	want := fmt.Sprintf("hermes-supervisor: another hermes-supervisor (pid %d) already supervises %s", pidA, h.Home)
	if !strings.Contains(out, want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("second supervisor said %q, want one line with %q", out, want)
	}
	if got := recordPID(h.PIDFile()); got != gwA || !alive(gwA) {
		t.Fatalf("gateway %d was touched (gateway.pid names %d):\n%s", gwA, got, supA.out)
	}
	if strings.Contains(supA.out.String(), "gateway exited") {
		t.Fatalf("supervisor A saw its gateway exit:\n%s", supA.out)
	}

	// B left a free lock file at the path. A restart makes A write its
	// state file, and A takes the lock at the path again.
	if err := supA.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "supervisor A holding the lock at the path", func() bool {
		return heldBy(h.SupervisorLock()) == pidA
	}, func() string { return supA.out.String() })
	// Its log is written from a queue of its own: waited for, as any
	// line of a running supervisor.
	waitFor(t, "A saying its lock was replaced", func() bool {
		return strings.Contains(supA.out.String(), "lock file was removed or replaced")
	}, func() string { return supA.out.String() })
	supA.cmd.Process.Signal(syscall.SIGTERM)
	if code := supA.exited(t, 30*time.Second); code != 0 {
		t.Fatalf("supervisor A exited %d:\n%s", code, supA.out)
	}
}

// heldBy is the pid recorded in the lock file path while someone holds
// it locked; 0 when it is free or missing.
func heldBy(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := safefs.LockFile(f); !errors.Is(err, safefs.ErrLocked) {
		if err == nil {
			_ = safefs.UnlockFile(f)
		}
		return 0
	}
	return recordPID(path)
}
