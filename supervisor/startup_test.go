package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

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
