//go:build unix

package lockstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// openProbe opens path read-only, enough for flock, never following a
// final symlink nor blocking on a FIFO.
func openProbe(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		err = safefs.ErrNotRegular
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// expandable: POSIX expanduser is pyparse.ExpandUser.
func expandable(string) bool { return true }
