//go:build !windows

package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

// TestHomeAddressesFollowTheLink: a supervisor listens at its resolved
// home's address, and a client given the home as a link, short or too long
// for a socket path in it, or as the target itself, tries that address
// (issue 23 item 8: from any shell, a client finds a supervisor of its home).
func TestHomeAddressesFollowTheLink(t *testing.T) {
	dir := testdir.New(t)
	target := filepath.Join(dir, "h")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "s")
	long := filepath.Join(dir, strings.Repeat("l", 120))
	for _, l := range []string{short, long} {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	listens := ctlsock.Address(target)
	for _, asked := range []string{target, short, long} {
		if got := homeAddresses(asked); !slices.Contains(got, listens) {
			t.Errorf("homeAddresses(%q) = %q: lacks %q, where the supervisor listens", asked, got, listens)
		}
	}
	if got := ctlsock.Addresses(long); slices.Contains(got, listens) {
		t.Fatalf("the long link's own addresses %q already hold the target's: the test proves nothing", got)
	}
}
