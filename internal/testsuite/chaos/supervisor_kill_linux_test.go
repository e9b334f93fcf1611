package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
)

// TestSupervisorSIGKILL kills the supervisor itself 0-150 ms after it
// started (while it sweeps, adopts or kills an orphan, starts or waits on
// the gateway), then starts a new one. At the end exactly one gateway and
// its one helper run for the home, the lock names that gateway, and after
// a stop nothing runs.
func TestSupervisorSIGKILL(t *testing.T) {
	r := rng(t)
	h := newHome(t, "")
	args := []string{"run", "--initial-backoff=1ms", "--max-backoff=10ms", "--", bin, demogateway.Command, "-spawn-grandchild"}
	tried, survived := 0, 0
	var maxGW int
	for tried < *supKills {
		sup := h.start(t, args...)
		time.Sleep(time.Duration(r.IntN(150_000)) * time.Microsecond)
		sup.kill()
		tried++
		// Orphans may outlive a killed supervisor, but never more than
		// one gateway per home: the next supervisor takes over the one
		// left. A second live gateway would mean a duplicate start.
		gws, _ := gateways(h.Home)
		maxGW = max(maxGW, len(gws))
		if len(gws) > 1 {
			t.Fatalf("kill %d: %d gateways run for one home: %v", tried, len(gws), gws)
		}
		survived++
	}
	sup := h.start(t, args...)
	st := h.waitHealthy(t, sup, 0)
	var gws, helpers []procInfo
	waitFor(t, "exactly one gateway and one helper", func() bool {
		gws, helpers = gateways(h.Home)
		return len(gws) == 1 && gws[0].pid == st.Child.PID && len(helpers) == 1
	}, func() string {
		return fmt.Sprintf("gateways %v, helpers %v, status child %d\n%s", gws, helpers, st.Child.PID, sup.out)
	})
	if got := recordPID(h.ScopedLock(demogateway.Scope, "demo-token")); got != st.Child.PID {
		t.Fatalf("the scoped lock names %d, the live gateway is %d", got, st.Child.PID)
	}
	if got := recordPID(h.PIDFile()); got != st.Child.PID {
		t.Fatalf("gateway.pid names %d, the live gateway is %d", got, st.Child.PID)
	}
	if out, code := h.exec("stop"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	sup.exited(t, 30*time.Second)
	// The helper gets SIGKILL as its gateway exits; the kernel may take a
	// moment to finish it.
	waitFor(t, "nothing running after stop", func() bool {
		gws, helpers = gateways(h.Home)
		return len(gws)+len(helpers) == 0
	}, func() string {
		return fmt.Sprintf("after stop still running: %v %v\n%s", gws, helpers, sup.out)
	})
	tried++
	survived++
	tally.add(count{"2. supervisor SIGKILL at random moments, then a new one", tried, survived,
		fmt.Sprintf("never two gateways for one home (at most %d seen), at the end exactly one gateway and one helper with the locks, none after `stop`", maxGW)})
}
