//go:build unix

package lockstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// Permission bits do not stop root, so as root this test runs itself again
// as nobody (uid 65534).
func TestUnreadableFileIsKept(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv("LOCKSTORE_AS_NOBODY") == "" {
		bin := testdir.OpenCopy(t, "lockstore.test")
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

// A rewrite of gateway_state.json keeps its mode and owner, as Hermes'
// atomic_json_write does, and replaces it in one rename.
func TestStateRewriteKeepsModeAndOwner(t *testing.T) {
	_, l := newStore(t)
	path := l.StateFile()
	if err := os.WriteFile(path, []byte(`{"pid": 1, "gateway_state": "running"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUID, wantGID := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		wantUID, wantGID = 65534, 65534
	}
	if err := os.Chown(path, wantUID, wantGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if err := UpdateState(l, time.Now(), func(m map[string]any) { m["gateway_state"] = "stopped" }); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := after.Sys().(*syscall.Stat_t)
	if after.Mode().Perm() != 0o640 || int(st.Uid) != wantUID || int(st.Gid) != wantGID {
		t.Fatalf("after the rewrite: mode %v owner %d:%d, want 0640 %d:%d", after.Mode().Perm(), st.Uid, st.Gid, wantUID, wantGID)
	}
	if os.SameFile(before, after) {
		t.Fatal("rewritten in place, not replaced atomically")
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"stopped"`) {
		t.Fatalf("content %s", b)
	}
}
