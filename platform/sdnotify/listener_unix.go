//go:build unix

package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// notifyDirPrefix names a notify socket's directory, so that an operator
// who finds it (or the socket, in /proc/net/unix) knows whose it is.
const notifyDirPrefix = "hermes-supervisor-notify-"

// maxSocketPath stays under sun_path (108 on Linux, 104 on macOS).
const maxSocketPath = 100

// makeNotifyDir makes a fresh 0700 directory for one start's notify socket
// and returns it, the socket's path in it, and the directory held open
// with a shared flock: systemd-tmpfiles' age-based cleaning skips a locked
// directory, and a gateway may run for longer than /tmp's age limit. The
// first of dir, $XDG_RUNTIME_DIR, the temporary directory and /tmp is used
// that is an absolute directory no other user can swap entries in (not
// writable by its group or others, or sticky), on a path no other user can
// rename a directory of (see unswappable), and whose socket path fits in
// sun_path: a longer path would reach Hermes as an address it cannot
// connect to.
// notifyDir is the socket's private directory, removed on Close, and the
// directory held open with a shared flock (see makeNotifyDir).
type notifyDir struct {
	dir  string
	lock *os.File
}

func makeNotifyDir(dir string) (d, path string, lock *os.File, err error) {
	var errs []error
	for _, parent := range []string{dir, os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp"} {
		if parent == "" {
			continue
		}
		if d, path, lock, err = tryNotifyDir(parent); err == nil {
			return d, path, lock, nil
		}
		errs = append(errs, err)
	}
	return "", "", nil, fmt.Errorf("no directory for the notify socket: %w", errors.Join(errs...))
}

func tryNotifyDir(parent string) (d, path string, lock *os.File, err error) {
	if !filepath.IsAbs(parent) {
		return "", "", nil, fmt.Errorf("%q is not an absolute path", parent)
	}
	var st unix.Stat_t
	if err := unix.Stat(parent, &st); err != nil {
		return "", "", nil, &os.PathError{Op: "stat", Path: parent, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", "", nil, fmt.Errorf("%s is not a directory", parent)
	case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		// A member of the group could rename our directory and put
		// theirs in its place: the gateway would report to them.
		return "", "", nil, fmt.Errorf("%s has mode %#o: other users may rename what is in it", parent, st.Mode&0o7777)
	}
	// The longest name MkdirTemp makes: the prefix and ten digits.
	if n := len(filepath.Join(parent, notifyDirPrefix+"0123456789", "n")); n >= maxSocketPath {
		return "", "", nil, fmt.Errorf("a socket in %s would have a path of %d bytes, more than a unix socket address holds", parent, n)
	}
	d, err = os.MkdirTemp(parent, notifyDirPrefix)
	if err != nil {
		return "", "", nil, err
	}
	// MkdirTemp asks for 0700 but the umask could only narrow it; a
	// chmod after the fact states the intent for whoever reads this.
	if err = os.Chmod(d, 0o700); err == nil {
		err = unswappable(d)
	}
	if err == nil {
		lock, err = os.Open(d)
	}
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.Remove(d)
		return "", "", nil, fmt.Errorf("notify socket directory %s: %w", d, err)
	}
	return d, filepath.Join(d, "n"), lock, nil
}

// unswappable checks that no other user can rename a directory on the
// path of d, ours and fresh: the gateway connects by path at every
// datagram, so one who could would hear it instead of us. A sticky parent
// stops other users but not its owner, and a directory higher up may be
// open to all: safefs.OpenDir judges every component (ours or root's, none
// writable by others unless sticky).
func unswappable(d string) error {
	root, _, err := safefs.OpenDir(d, false)
	if err != nil {
		return err
	}
	return root.Close()
}

// listenIn opens a datagram socket in a fresh 0700 directory (see
// makeNotifyDir; dir is tried first).
func listenIn(dir string) (*Listener, error) {
	d, path, lock, err := makeNotifyDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	l := &Listener{addr: path, notifyDir: notifyDir{dir: d, lock: lock}}
	l.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		l.notifyDir.remove(l.addr)
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	return l, nil
}

func (l *Listener) discard() (int, error) {
	raw, err := l.conn.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("empty the notify socket: %w", err)
	}
	n := 0
	var rerr error
	buf := make([]byte, 1)
	err = raw.Control(func(fd uintptr) {
		for {
			_, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			switch {
			case err == nil:
				n++
				continue
			case errors.Is(err, unix.EINTR):
				continue
			case !errors.Is(err, unix.EAGAIN):
				rerr = err
			}
			return
		}
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return n, fmt.Errorf("empty the notify socket: %w", err)
	}
	return n, nil
}

// remove removes the socket at addr and its directory, not recursively:
// nothing else was put there, and nobody else could.
func (d *notifyDir) remove(addr string) {
	if d.dir == "" {
		return
	}
	_ = os.Remove(addr)
	_ = os.Remove(d.dir)
	if d.lock != nil {
		_ = d.lock.Close()
	}
}
