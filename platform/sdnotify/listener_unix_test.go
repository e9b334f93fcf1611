//go:build unix

package sdnotify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The notify socket lives in a fresh 0700 directory of a parent no other
// user can swap it out of, at a path Hermes can connect to; a parent that
// fails either rule is passed over for the next, never used.
func TestListenNotifyPlacesItsSocketSafely(t *testing.T) {
	// Short, unlike t.TempDir's or macOS' $TMPDIR: the socket's path must fit sun_path.
	base, err := os.MkdirTemp("/tmp", "n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	long := filepath.Join(base, strings.Repeat("d", 120-len(base)))
	open := filepath.Join(base, "open")
	group := filepath.Join(base, "group")
	sticky := filepath.Join(base, "sticky")
	for _, d := range []string{long, open, group, sticky} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Chmod, not the umask-narrowed mode of MkdirAll.
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		used      bool
	}{
		{"private", base, true},
		{"sticky and open to all, as /tmp", sticky, true},
		{"open to all without the sticky bit", open, false},
		// A member of the group could swap the socket's directory for one
		// of theirs: the gateway would report to them, and never be ready.
		{"open to its group without the sticky bit", group, false},
		{"too long for sun_path", long, false},
		{"relative", "relative", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			addr, dir := l.Addr(), filepath.Dir(l.Addr())
			if used := filepath.Dir(dir) == tc.dir; used != tc.used {
				t.Fatalf("socket at %s: parent %s used = %v, want %v", addr, tc.dir, used, tc.used)
			}
			if len(addr) >= maxSocketPath || !filepath.IsAbs(addr) {
				t.Fatalf("address %q is not an absolute path that fits sun_path", addr)
			}
			fi, err := os.Lstat(dir)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !strings.HasPrefix(filepath.Base(dir), notifyDirPrefix) {
				t.Fatalf("directory %s: %v, %v", dir, fi, err)
			}
			// The flock that keeps systemd-tmpfiles away is held.
			f, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
				t.Errorf("%s is not locked", dir)
			}
			f.Close()
			if err := Send(addr, "READY=1"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			d, err := l.Receive(buf)
			if err != nil || string(buf[:d.N]) != "READY=1" {
				t.Fatalf("received %q, %v", buf[:d.N], err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Fatalf("%s left behind: %v", dir, err)
			}
		})
	}
}

// A listener made ahead of its gateway holds whatever anyone sent it
// before the start; Discard, run just before the start, leaves none of it
// to be read as the gateway's, and what comes after is received.
func TestDiscardDropsWhatCameBeforeTheStart(t *testing.T) {
	l := newTestListener(t)
	send := func(msg string) {
		t.Helper()
		if err := Send(l.Addr(), msg); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		send("WATCHDOG=trigger")
	}
	if n, err := l.Discard(); err != nil || n != 3 {
		t.Fatalf("Discard = %d, %v; want the 3 datagrams sent before the start", n, err)
	}
	if n, err := l.Discard(); err != nil || n != 0 {
		t.Fatalf("a second Discard = %d, %v; want 0", n, err)
	}
	send("READY=1")
	buf := make([]byte, 64)
	d, err := l.Receive(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:d.N]); got != "READY=1" {
		t.Fatalf("received %q after Discard, want READY=1", got)
	}
}

// newTestListener opens a listener in a short temporary directory: the
// socket's path must fit sun_path, which t.TempDir's may not.
func newTestListener(t *testing.T) *Listener {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	l, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
