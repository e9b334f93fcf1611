package supervisor

import (
	"context"
	"strings"
	"testing"
)

// TestQueryStatusShowsProvenOrphan: after its supervisor was killed, status
// shows the gateway as a still-running orphan only when the gateway's own
// environment carries the nonce the state file of this boot records; it
// never signals anything.
func TestQueryStatusShowsProvenOrphan(t *testing.T) {
	nonce, hash := newNonce()
	_, otherHash := newNonce()
	for _, c := range []struct {
		name   string
		hash   string
		boot   func(t *testing.T) string
		orphan bool
	}{
		{"proven", hash, thisBoot, true},
		{"another nonce", otherHash, thisBoot, false},
		{"another boot", hash, func(*testing.T) string { return "another-boot" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHome(t)
			gw := startSentinel(t, "HERMES_HOME="+h.layout.Home, EnvNonce+"="+nonce)
			st := &Status{State: Running, BootID: c.boot(t), NonceHash: c.hash, Child: childOf(gw.id, c.hash)}
			st.Supervisor.PID = 1 << 22 // dead: no endpoint answers
			writeState(t, h.layout, st)
			got, err := QueryStatus(context.Background(), h.layout)
			if err != nil {
				t.Fatal(err)
			}
			if got.Up() {
				t.Errorf("state %s: a dead supervisor is not up", got.State)
			}
			isOrphan := got.Child != nil && got.Child.Orphaned && got.Child.PID == gw.id.PID
			if isOrphan != c.orphan || c.orphan != strings.Contains(got.Reason, "still runs unsupervised") {
				t.Errorf("orphan %v, want %v: %+v, reason %q", isOrphan, c.orphan, got.Child, got.Reason)
			}
			if !c.orphan && got.Child != nil {
				t.Errorf("an unproven process is shown as our gateway: %+v", got.Child)
			}
			gw.untouched()
		})
	}
}
