package lockstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSweepDirSwappedForSymlink replays the attack of issue 13 item 4: the
// lock dir is swapped for a symlink to another directory between judging a
// stale lock and removing it. The sweep must act on the directory it
// judged, never on a file of the same name behind the symlink.
func TestSweepDirSwappedForSymlink(t *testing.T) {
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	elsewhere := testdir.New(t)
	victim := filepath.Join(elsewhere, filepath.Base(path))
	want := []byte("root-only bytes that are no lock record\n")
	if err := os.WriteFile(victim, want, 0o600); err != nil {
		t.Fatal(err)
	}
	moved := l.LockDir + ".moved"
	swapped := false
	s.beforeRemove = func(p string) {
		if p != path || swapped {
			return
		}
		swapped = true
		if err := os.Rename(l.LockDir, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, l.LockDir); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := s.Sweep(context.Background(), false)
	if !swapped {
		t.Fatalf("the sweep never reached the stale lock: %+v", entries)
	}
	got, err := os.ReadFile(victim)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file behind the symlink = %q, %v; want %q intact", got, err, want)
	}
	des, err := os.ReadDir(elsewhere)
	if err != nil || len(des) != 1 {
		t.Fatalf("the directory behind the symlink changed: %v %v", des, err)
	}
}
