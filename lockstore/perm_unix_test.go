//go:build unix

package lockstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Permission bits do not stop root, so as root this test runs itself again
// as nobody (uid 65534).
func TestUnreadableFileIsKept(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv("LOCKSTORE_AS_NOBODY") == "" {
		// go test's build dir is private to root: run a copy nobody may exec.
		dir, err := os.MkdirTemp("", "lockstore-nobody")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "lockstore.test")
		b, err := os.ReadFile(os.Args[0])
		if err == nil {
			err = os.WriteFile(bin, b, 0o755)
		}
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestUnreadableFileIsKept$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "LOCKSTORE_AS_NOBODY=1", "TMPDIR=/tmp")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestUnreadableFileIsKept") {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		return
	}
	s, l := newStore(t)
	p := l.ScopedLock("telegram-bot-token", "x")
	writeRecord(t, p, deadIdentity(t), l.Home)
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	es, err := s.Sweep(context.Background(), false)
	var fe *FileError
	if !errors.Is(err, os.ErrPermission) || !errors.As(err, &fe) || fe.Path != p || byPath(es)[p].Action != ActionError {
		t.Fatalf("unreadable: %v %+v", err, es)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("unreadable file removed: %v", err)
	}
	t.Log(err)
}
