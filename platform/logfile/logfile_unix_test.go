//go:build unix

package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestRotationFollowsNothingPlanted is the attack on a rotation: whoever
// can write the log's directory (the gateway, as the same user) puts a
// FIFO, then a link to a file of the user's, at the log's path, where the
// next rotation opens it anew. The FIFO must fail the write at once
// (lumberjack blocked on it, and every log line, the supervisor's loop
// included, behind it); the link is moved aside as a name, its target
// neither truncated nor written; and once the path is free the log goes on.
func TestRotationFollowsNothingPlanted(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "hermes-supervisor.log")
	l, err := Open(path, 50, 3, clock())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := []byte(strings.Repeat("y", 39) + "\n")
	if _, err := l.Write(line); err != nil {
		t.Fatal(err)
	}

	// A FIFO takes the path: the file is moved away and a FIFO made.
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// This write rotates (40 + 40 > 50): the rename moves the FIFO aside
	// as a backup, and the path is created afresh.
	if _, err := l.Write(line); err != nil {
		t.Fatalf("write after a FIFO took the path: %v", err)
	}
	// Now a FIFO appears after the rotation's rename, before its open:
	// simulated by making the open itself meet one.
	l.mu.Lock()
	l.f.Close()
	l.f = nil
	l.mu.Unlock()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(line); !errors.Is(err, safefs.ErrNotRegular) {
		t.Fatalf("write with a FIFO at the path: %v, want ErrNotRegular at once", err)
	}

	// A link to a file of the user's takes the path instead.
	victim := plantLink(t, path)
	if _, err := l.Write(line); !errors.Is(err, safefs.ErrNotRegular) {
		t.Fatalf("write with a link at the path: %v, want ErrNotRegular", err)
	}
	// Freed, the log goes on, in a regular file of its own.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(line); err != nil {
		t.Fatalf("write once the path is free: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the log is %v (%v), want a regular file", fi, err)
	}
}

// TestRotationMovesAPlantedLinkAsAName: a link put at the path while the
// file is open is what the next rotation renames, as a name: its target is
// never truncated, and the new log is a regular file.
func TestRotationMovesAPlantedLinkAsAName(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "hermes-supervisor.log")
	l, err := Open(path, 50, 3, clock())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	victim := plantLink(t, path)
	line := []byte(strings.Repeat("z", 39) + "\n")
	for range 3 {
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the log is %v (%v), want a regular file", fi, err)
	}
}

// plantLink puts at path, in place of what is there, a link to a file of
// the user's beside it, and returns that file, which holds "keep me\n".
func plantLink(t *testing.T, path string) string {
	t.Helper()
	victim := filepath.Join(filepath.Dir(path), "precious")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return victim
}
