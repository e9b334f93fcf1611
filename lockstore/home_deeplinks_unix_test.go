//go:build !windows

package lockstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestHomeThroughLinksNestedTooDeep: Python 3.11 and 3.12's realpath
// (_joinrealpath) recurses once for each link whose target holds a link,
// so a hermes_home at the head of a chain of 1000 links, each to the
// next, makes resolve() raise RecursionError (3.11.7 and 3.12.1 do from
// 995 on, fewer under a deeper caller), and Hermes on them removes
// nothing. 3.13 resolves the chain (to another home). With the lock held
// by a live gateway, the gateway.pid was swept here as another home's. A
// short chain to another home resolves in every Python, and is swept.
func TestHomeThroughLinksNestedTooDeep(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		links int
		keep  bool
	}{
		{1000, true},
		{20, false},
	} {
		t.Run(fmt.Sprint(tt.links), func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			dir := filepath.Dir(e.Home)
			for i := range tt.links {
				if err := os.Symlink(fmt.Sprintf("l%d", i+1), filepath.Join(dir, fmt.Sprintf("l%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if got := liveGatewayRecordNaming(t, e, filepath.Join(dir, "l0")); (got.Action == ActionKeep) != tt.keep {
				t.Fatalf("hermes_home l0, %d links deep: %s/%s (%s), want kept %v", tt.links, got.Verdict, got.Action, got.Reason, tt.keep)
			}
		})
	}
}
