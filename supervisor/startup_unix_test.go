//go:build unix

package supervisor

import (
	"os"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestDeletedHomeIsNotACrash (POSIX: Windows cannot delete a home the
// gateway has open): the home is deleted under a running
// supervisor and its gateway then dies. The old code restarted it into a
// crash loop and stayed failed after the home came back; now status says
// what happened, nothing counts as a crash, and the gateway comes back
// with the home.
func TestDeletedHomeIsNotACrash(t *testing.T) {
	p := testPolicy()
	p.CrashLoopMax = 2
	h := startHarness(t, p)
	first := h.waitReady()
	if testdir.Remove(h.layout.Home); exists(h.layout.Home) {
		t.Fatalf("%s is still there after its removal", h.layout.Home)
	}
	if err := killHard(first.Child.PID); err != nil {
		t.Fatal(err)
	}
	// More retries than the crash loop allows, none of them a crash.
	for i := 0; i < p.CrashLoopMax+2; i++ {
		st := h.waitFor("a retry", func(s *Status) bool {
			if s.State == Failed {
				t.Fatalf("a deleted home drove the supervisor to failed: %s", s.Reason)
			}
			return s.State == Backoff
		})
		if !strings.Contains(st.Reason, "deleted under the running supervisor") || !strings.Contains(st.StartupError, h.layout.Home) {
			t.Fatalf("status does not say the home was deleted: %q / %q", st.Reason, st.StartupError)
		}
	}
	if err := os.MkdirAll(h.layout.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady()
	if st.StartupError != "" || st.Child.PID == first.Child.PID {
		t.Fatalf("after the home came back: %+v", st)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
