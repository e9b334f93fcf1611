package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"golang.org/x/sys/unix"
)

// TestHelperLeftAloneTwoSupervisorsLater replays the order behind a rare
// failure of TestSupervisorSIGKILL. Supervisor 1 is killed after it
// started its gateway but before it recorded it (the test removes the
// record), and the gateway dies and is reaped before anyone looks, so its helper's group has no
// leader left to prove it was a gateway's: supervisor 2 names the helper
// in a warning and leaves it alone (a setsid'd tool's child looks the
// same). Supervisor 2 is killed too. Supervisor 3 knows only supervisor
// 2's nonce, so the helper is not even a candidate for it: it must neither
// touch it nor name it, and the warning that accounts for the helper is
// supervisor 2's.
func TestHelperLeftAloneTwoSupervisorsLater(t *testing.T) {
	h := newHome(t, "")
	args := []string{"run", "--initial-backoff=1ms", "--max-backoff=10ms", "--", bin, demogateway.Command, "-spawn-grandchild"}

	// The test adopts supervisor 1's orphans, so that it can reap the
	// gateway itself: whatever runs as PID 1 here may not.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	subreaper := true
	unsubreap := func() {
		if subreaper {
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			subreaper = false
		}
	}
	t.Cleanup(unsubreap)

	sup1 := h.start(t, args...)
	a := h.waitHealthy(t, sup1, 0).Child.PID
	helper := waitHelper(t, h.Home, a)
	sup1.kill()
	if err := syscall.Kill(a, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(a, &ws, 0, nil); err != nil {
		t.Fatalf("reap gateway %d: %v", a, err)
	}
	unsubreap()
	forgetChild(t, h.SupervisorState())
	// The helper was re-parented to the test; it is reaped when the test
	// has killed it.
	t.Cleanup(func() {
		_ = syscall.Kill(helper, syscall.SIGKILL)
		_, _ = syscall.Wait4(helper, &ws, 0, nil)
	})

	sup2 := h.start(t, args...)
	h.waitHealthy(t, sup2, 0)
	waitFor(t, fmt.Sprintf("supervisor 2 naming helper %d as left alone", helper), func() bool {
		return leftAloneIn(sup2.out.String(), helper)
	}, func() string { return sup2.out.String() })
	sup2.kill()

	sup3 := h.start(t, args...)
	st := h.waitHealthy(t, sup3, 0)
	var gws, helpers []procInfo
	waitFor(t, "one gateway with its own helper, and the helper left alone", func() bool {
		gws, helpers = gateways(h.Home)
		return len(gws) == 1 && gws[0].pid == st.Child.PID && len(helpers) == 2 &&
			slices.ContainsFunc(helpers, func(p procInfo) bool { return p.ppid == st.Child.PID })
	}, func() string { return fmt.Sprintf("gateways %v, helpers %v\n%s", gws, helpers, sup3.out) })
	if !alive(helper) {
		t.Fatalf("helper %d, never proven a gateway's, was killed", helper)
	}
	if leftAloneIn(sup3.out.String(), helper) {
		t.Errorf("supervisor 3 named helper %d, which carries no nonce it knows:\n%s", helper, sup3.out)
	}
	// Accounting for it takes every supervisor's log, as
	// TestSupervisorSIGKILL does.
	own, left := ownHelpers(helpers, st.Child.PID, sup3.out.String())
	if len(own) != 2 || len(left) != 0 {
		t.Fatalf("with supervisor 3's log alone: own %v, left %v; want the stray helper counted as own", own, left)
	}
	own, left = ownHelpers(helpers, st.Child.PID, sup2.out.String()+sup3.out.String())
	if len(own) != 1 || len(left) != 1 || left[0].pid != helper {
		t.Fatalf("with every supervisor's log: own %v, left %v; want helper %d left", own, left, helper)
	}
	if out, code := h.exec("stop"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	if !alive(helper) {
		t.Fatalf("stop killed helper %d, never proven a gateway's", helper)
	}
}

// forgetChild rewrites a killed supervisor's state file as it was between
// the gateway's fork and its record: without the child.
func forgetChild(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st["child"]; !ok {
		t.Fatalf("%s names no child:\n%s", path, b)
	}
	delete(st, "child")
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitHelper waits for gateway's helper and returns its pid.
func waitHelper(t *testing.T, home string, gateway int) int {
	t.Helper()
	var helpers []procInfo
	waitFor(t, "the gateway's helper", func() bool {
		_, helpers = gateways(home)
		return slices.ContainsFunc(helpers, func(p procInfo) bool { return p.ppid == gateway })
	})
	return helpers[slices.IndexFunc(helpers, func(p procInfo) bool { return p.ppid == gateway })].pid
}

// leftAloneIn reports whether a supervisor's log names pid as a process
// of a previous supervisor it leaves alone.
func leftAloneIn(log string, pid int) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "outside its gateway's process group; leaving it alone") && strings.Contains(line, fmt.Sprintf(`"pid": %d,`, pid)) {
			return true
		}
	}
	return false
}
