package proctree

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func awaitProcess(ctx context.Context, pid int, same func() bool) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil // gone already
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("pidfd_open: %w", errors.ErrUnsupported)
	case err != nil:
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if !same() {
		return ErrNotSame
	}
	for ctx.Err() == nil {
		// Bounded, so that a cancelled ctx is seen within a second.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 1000)
		if n > 0 {
			return nil
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll pidfd of %d: %w", pid, err)
		}
	}
	return ctx.Err()
}
