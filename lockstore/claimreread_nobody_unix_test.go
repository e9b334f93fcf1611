//go:build unix

package lockstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSweepKeepsARewriteItCannotRead: a stale lock is rewritten in place
// after it was judged, and made unreadable, before it is moved: the file
// in the bin changed and cannot be read back, so nothing proves it stale,
// and it goes back under its name. Before 57c8c12 the removal's own open
// of the name failed on it; since judging's descriptor is kept, the read
// in the bin is the first to fail, and the file was swept. Permission
// bits do not stop root, so as root this test runs itself again as
// nobody (uid 65534).
func TestSweepKeepsARewriteItCannotRead(t *testing.T) {
	const name = "TestSweepKeepsARewriteItCannotRead"
	if os.Geteuid() == 0 && os.Getenv("LOCKSTORE_AS_NOBODY") == "" {
		bin := testdir.OpenCopy(t, "lockstore.test")
		cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "LOCKSTORE_AS_NOBODY=1", "TMPDIR=/tmp")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		return
	}
	live := startProc(t, "block", true)
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	claim := writeRecord(t, filepath.Join(testdir.New(t), "claim"), live, l.Home)
	s.beforeRemove = func(p string) {
		if p != path {
			return
		}
		if err := os.WriteFile(path, claim, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
	}
	es, _ := s.Sweep(context.Background(), false)
	// Kept, or an error where the removal opened the name again (no room
	// to keep it open since judging): either way where it was.
	if got := byPath(es)[path]; got.Action == ActionSwept || got.Action == ActionQuarantined {
		t.Errorf("the rewritten, unreadable lock: %s (%s), want it kept", got.Action, got.Reason)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Size() != int64(len(claim)) {
		t.Fatalf("the lock: %v, %v; want the claim's %d bytes back under its name", fi, err, len(claim))
	}
}
