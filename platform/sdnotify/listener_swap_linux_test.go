package sdnotify

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// The gateway connects to its notify socket by path at every datagram, so
// another user who can rename any directory on that path can move ours
// aside and put one of theirs, with their socket, in its place: they then
// hear READY=1 and every keep-alive instead of us (the gateway is taken
// down as hung), and read its STATUS=. A sticky parent stops other users
// from renaming our entry, but not the parent's owner; a private parent
// of ours inside a directory open to all can be renamed itself. Whatever
// parent the supervisor is given, no directory on the socket's path may
// be one another user can rename.
func TestNotifySocketPathCannotBeSwappedByAnotherUser(t *testing.T) {
	const other = 65534 // nobody
	if os.Geteuid() != 0 {
		t.Fatal("this test makes directories of another user (nobody) and renames as that user: run it as root")
	}
	// Short, unlike t.TempDir's: the socket's path must fit sun_path.
	base, err := os.MkdirTemp("/tmp", "n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	theirs := filepath.Join(base, "theirs") // sticky, open to all, owned by nobody
	open := filepath.Join(base, "open")     // open to all, no sticky bit
	ours := filepath.Join(open, "ours")     // private, but in open
	for _, d := range []string{theirs, ours} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dir  string
		mode os.FileMode
	}{{base, 0o755}, {theirs, 0o777 | os.ModeSticky}, {open, 0o777}, {ours, 0o700}} {
		if err := os.Chmod(c.dir, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	// The fallbacks after the given parent: /tmp, root's and sticky.
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", "")
	for _, tc := range []struct{ name, parent string }{
		{"a sticky parent another user owns", theirs},
		{"a private parent inside a directory open to all", ours},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(tc.parent)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			for d := filepath.Dir(l.Addr()); d != "/"; d = filepath.Dir(d) {
				mv := exec.Command("/bin/mv", "-T", d, d+".swapped")
				mv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: other, Gid: other}}
				if out, err := mv.CombinedOutput(); err == nil {
					os.Rename(d+".swapped", d)
					t.Fatalf("socket %s: uid %d renamed %s on its path; the gateway would then report to whatever they put there", l.Addr(), other, d)
				} else if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
					t.Fatalf("mv as uid %d: %v %s", other, err, out)
				}
			}
			if err := Send(l.Addr(), "READY=1"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if d, err := l.Receive(buf); err != nil || string(buf[:d.N]) != "READY=1" {
				t.Fatalf("received %q, %v", buf[:d.N], err)
			}
		})
	}
}
