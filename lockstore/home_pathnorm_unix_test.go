//go:build !windows

package lockstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestHomeNormalizedAsPathBeforeResolve: Hermes resolves Path(hermes_home),
// and Path() drops empty and "." components first, so <dir>/loop//x is
// <dir>/loop/x to resolve(). Python 3.11 and 3.12 stop at the loop, and
// their check of what they got meets it again: resolve() raises and
// get_running_pid removes nothing. Resolved unnormalized, the "/x" after
// the loop read as the root's /x, no loop, another home: the record was
// swept under a held lock where 3.11's Hermes keeps it. Each want is what
// Python 3.11.7 does on the same layout.
func TestHomeNormalizedAsPathBeforeResolve(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, recorded := range []string{"loop//x", "loop//./x", "loop/.//x/..", "loop//"} {
		t.Run(recorded, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			dir := filepath.Dir(e.Home)
			if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := canonical(dir + "/" + recorded); ok {
				t.Errorf("%s: no loop found, where Python 3.11's resolve() raises", recorded)
			}
			if got := liveGatewayRecordNaming(t, e, dir+"/"+recorded); got.Action != ActionKeep {
				t.Fatalf("hermes_home %s: %s/%s (%s), want kept", recorded, got.Verdict, got.Action, got.Reason)
			}
		})
	}
}
