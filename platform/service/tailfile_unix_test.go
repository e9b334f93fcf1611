//go:build unix

package service

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/asroot"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestTailFileTrustsNoLog: a failed install shows the last lines of the
// service's log, which a LaunchDaemon run as the user keeps in the user's
// directory and root reads back. A FIFO there must not hang the install,
// a link must not show root's files, and a 10 MB log is read from its end.
func TestTailFileTrustsNoLog(t *testing.T) {
	dir := testdir.New(t)
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.log")
	var b strings.Builder
	for b.Len() < 10<<20 {
		b.WriteString("an old line of the log, long enough to fill ten megabytes soon\n")
	}
	b.WriteString("the last line\n")
	if err := os.WriteFile(big, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- tailFile(fifo, 15, -1) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("a FIFO read as %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tailFile hangs on a FIFO")
	}
	if got := tailFile(link, 15, -1); got != "" {
		t.Errorf("a link was followed: %q", got)
	}
	got := tailFile(big, 2, -1)
	if got != "an old line of the log, long enough to fill ten megabytes soon\nthe last line" {
		t.Errorf("the end of a 10 MB log reads %q", got)
	}
	// Read for a user (a daemon's log in their directory, read as root):
	// a hard link to a file of root's shows nothing, their own file shows.
	t.Run("for a user", func(t *testing.T) {
		asroot.Require(t, "files of another user's need root")
		const user = 65534
		hard := filepath.Join(dir, "hard.log")
		if err := os.Link(secret, hard); err != nil {
			t.Fatal(err)
		}
		if got := tailFile(hard, 15, user); got != "" {
			t.Errorf("a hard link to root's file read as the user's log: %q", got)
		}
		theirs := filepath.Join(dir, "theirs.log")
		if err := os.WriteFile(theirs, []byte("their line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, user, user); err != nil {
			t.Fatal(err)
		}
		if got := tailFile(theirs, 15, user); got != "their line" {
			t.Errorf("the user's own log reads %q", got)
		}
	})
}
