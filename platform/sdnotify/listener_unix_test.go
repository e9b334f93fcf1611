//go:build unix

package sdnotify

import (
	"net"
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
	sticky := filepath.Join(base, "sticky")
	for _, d := range []string{long, open, sticky} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Chmod, not the umask-narrowed mode of MkdirAll.
	if err := os.Chmod(open, 0o777); err != nil {
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

// A directory made ahead holds no socket until Listen: nothing can queue a
// datagram for a gateway that does not exist yet. Listen takes it once,
// and whoever ends up owning it removes it.
func TestMakeDirHoldsNoSocketUntilListen(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })

	unused, err := MakeDir(base)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(unused.addr)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("made ahead: %v, %v; want a 0700 directory", st, err)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: unused.addr, Net: "unixgram"})
	if err == nil {
		c.Close()
		t.Fatalf("a datagram socket answered at %s before Listen", unused.addr)
	}
	unused.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close of an unused dir left %s: %v", dir, err)
	}
	if _, err := unused.Listen(); err == nil {
		t.Fatal("Listen after Close worked")
	}

	d, err := MakeDir(base)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Listen(); err == nil {
		t.Fatal("a second Listen in one directory worked")
	}
	d.Close() // the Listener owns it now: this must not remove its socket
	if _, err := os.Stat(l.Addr()); err != nil {
		t.Fatalf("the Dir's Close removed its Listener's socket: %v", err)
	}
	l.Close()
	if _, err := os.Stat(filepath.Dir(l.Addr())); !os.IsNotExist(err) {
		t.Fatalf("the Listener's Close left its directory: %v", err)
	}
}
