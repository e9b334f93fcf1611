package ctlsock

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/silentsock"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// throwawayUser creates a user, removed when t ends, and returns its uid.
func throwawayUser(t *testing.T, role string) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create users (CI runs as root)")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "hsc" + role + hex.EncodeToString(b[:])
	if out, err := exec.Command("useradd", "-M", "-U", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// TestDialChecksTheDirectory: a client used to check only the peer, and
// trusted root's: another user's directory holding a link by the socket's
// name sent the victim's request to any root socket. Dial now applies
// listen's rule first; a root socket is trusted only where only the user
// or root can put it.
func TestDialChecksTheDirectory(t *testing.T) {
	victim, attacker := throwawayUser(t, "v"), throwawayUser(t, "a")
	// A root daemon's socket anyone may connect to, counting who does.
	rootSock := filepath.Join(testdir.Open(t), "daemon.sock")
	heard := silentsock.Listen(t, rootSock)
	base := testdir.Open(t)
	tests := []struct {
		name      string
		owner     int
		mode      os.FileMode
		socket    func(t *testing.T, addr string)
		wantCode  int // the dial helper's exit: 0 reached, 5 ErrForeignPeer
		wantHeard bool
	}{
		{"another user's open dir, link to a root socket", attacker, 0o777, link(rootSock), 5, false},
		{"another user's private dir, link to a root socket", attacker, 0o755, link(rootSock), 5, false},
		{"our own dir, link to a root socket", victim, 0o700, link(rootSock), 5, false},
		{"root's dir, link to a root socket", 0, 0o755, link(rootSock), 5, false},
		{"root's dir, root's socket (a system supervisor)", 0, 0o755, bindAsRoot, 0, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			heard.Store(0)
			dir := filepath.Join(base, strconv.Itoa(i))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, tt.owner, tt.owner); err != nil {
				t.Fatal(err)
			}
			addr := filepath.Join(dir, "hermes-supervisor-0123456789abcdef.sock")
			tt.socket(t, addr)
			client := asUser(t, victim, "PLATFORM_HELPER=dial", "PLATFORM_ADDR="+addr)
			out, err := client.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Fatalf("dial as uid %d: exit %d, want %d\n%s", victim, code, tt.wantCode, out)
			}
			if n := heard.Load(); (n > 0) != tt.wantHeard {
				t.Fatalf("the root daemon heard %d connections of the victim's", n)
			}
		})
	}
}

// link makes addr a symbolic link to target.
func link(target string) func(*testing.T, string) {
	return func(t *testing.T, addr string) {
		if err := os.Symlink(target, addr); err != nil {
			t.Fatal(err)
		}
	}
}

// bindAsRoot listens at addr as root, mode 0666, serving until t ends.
func bindAsRoot(t *testing.T, addr string) {
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chmod(addr, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}
