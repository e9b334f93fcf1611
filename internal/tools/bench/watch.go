//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// dirWatch wakes a waiter when a file in one directory is created,
// written, renamed into place or removed. The timed waits use it rather
// than polling: Go cannot sleep for less than a millisecond once its
// poller blocks (time.Sleep(100µs) takes about 1.08 ms here), which cut
// every sample into millisecond steps and put the median of two close
// supervisors on either side of a step.
type dirWatch struct {
	fd  int
	buf []byte
}

// newDirWatch watches dir; Close ends the watch.
func newDirWatch(dir string) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_ATTRIB
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	return &dirWatch{fd: fd, buf: make([]byte, 64<<10)}, nil
}

// Close ends the watch.
func (w *dirWatch) Close() error { return unix.Close(w.fd) }

// until returns once done reports true, checking it at once and again
// after every change in the directory; it gives up after limit. The
// check also runs every 10 ms, for a condition that turns true without
// a write (a pid that was reused goes away).
func (w *dirWatch) until(ctx context.Context, limit time.Duration, done func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if done() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("not within " + limit.String())
		}
		// Blocking this thread in poll(2) is the point: it wakes within
		// microseconds of the write, where Go's timers would not.
		pfd := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(min(left, 10*time.Millisecond)/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll inotify: %w", err)
		}
		for {
			if _, err := unix.Read(w.fd, w.buf); err != nil {
				break // EAGAIN: drained
			}
		}
	}
}
