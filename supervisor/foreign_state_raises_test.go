package supervisor

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestForeignStateHermesRaisesOn: with gateway.lock free, a
// gateway_state.json that Hermes' get_runtime_status_running_pid raises on
// (its "gateway_state" a list, or an integer past Python's lowest digit
// limit) counts as a running gateway, so the supervisor backs off. Its
// reason must name that file and why, not "gateway_state.json names live
// gateway pid 0" (the empty record of a file that did not read) or the
// record's pid as live, which nobody looked at.
func TestForeignStateHermesRaisesOn(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		name, why string
		state     func(e *conformance.Env) any
	}{
		{"gateway_state a list", `"gateway_state" is a list or object`, func(e *conformance.Env) any {
			rec := e.Record(e.Dead("hermes", "gateway", "run"), e.Home)
			rec["gateway_state"] = []string{"running"}
			return rec
		}},
		{"an integer of 641 digits", "more than 640 digits", func(e *conformance.Env) any {
			return `{"pid": 7, "gateway_state": "running", "n": ` + strings.Repeat("9", 641) + `}`
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			e.FreeLock()
			e.Write(e.StateFile(), tt.state(e))
			snap := conformance.Snap(t, e.StateFile())
			h, st := backOffIn(t, e, procstate.NewProber(procstate.Options{StartTolerance: -1}))
			for _, want := range []string{"raises on gateway_state.json", tt.why, "fix or remove " + e.StateFile()} {
				if st.Child != nil || !strings.Contains(st.Reason, want) {
					t.Fatalf("%s (%s), child %+v; want a back-off saying %q", st.State, st.Reason, st.Child, want)
				}
			}
			if regexp.MustCompile(`pid \d`).MatchString(st.Reason) {
				t.Fatalf("the reason names a pid nobody proved: %s", st.Reason)
			}
			h.end()
			snap.Same(t, e.StateFile())
			if _, err := os.Stat(e.PIDFile()); !os.IsNotExist(err) {
				t.Fatalf("a gateway.pid appeared: %v", err)
			}
		})
	}
}
