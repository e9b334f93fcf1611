package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// newHomeOnly makes a home and lock dir, removed when t ends.
func newHomeOnly(t *testing.T) lockstore.Layout {
	dir := testdir.New(t)
	l := lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
	for _, d := range []string{l.Home, l.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// TestDeletedHomeIsNotACrash: the home is deleted under a running
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
		t.Skip("cannot delete a home the gateway has open here (Windows)")
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

func TestProbeDirs(t *testing.T) {
	h := newHomeOnly(t)
	s := &Supervisor{cfg: Config{Layout: h}}
	if err := s.probeDirs(); err != nil {
		t.Fatal(err)
	}
	testdir.Remove(h.LockDir)
	if err := s.probeDirs(); err != nil {
		t.Fatalf("a missing lock dir is made, as Hermes does: %v", err)
	}
	testdir.Remove(h.Home)
	if err := s.probeDirs(); !errors.Is(err, ErrHomeDeleted) {
		t.Fatalf("deleted home: %v", err)
	}
	s.homeSeen = false
	if err := s.probeDirs(); !errors.Is(err, errUnusableDir) {
		t.Fatalf("missing home: %v", err)
	}
}
