//go:build unix

package lockstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// probeHeld opens path read-only, enough for flock, never following a
// final symlink nor blocking on a FIFO, and tries the lock. It works on
// the bare descriptor: an os.File would add two fcntl calls and an
// epoll_ctl to every probe, and a sweep probes every file it would move.
// Closing the only descriptor lets go of a lock it took.
func probeHeld(path string) (bool, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		err = safefs.ErrNotRegular
	}
	if err != nil {
		return false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return true, nil
		}
		return false, &os.PathError{Op: "lock", Path: path, Err: err}
	}
}

// expandable: POSIX expanduser is pyparse.ExpandUser.
func expandable(string) bool { return true }
