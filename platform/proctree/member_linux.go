package proctree

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// handle pins a process found in the tree: a pidfd where the kernel has
// them (5.3), so that a signal reaches that very process even if its pid
// is reused after it was found; else -1, and the start time is checked
// again just before each signal.
type handle struct{ fd int }

func openHandle(pid int) handle {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return handle{fd: -1}
	}
	return handle{fd: fd}
}

// signal sends sig to the process the handle was opened on. Without a
// pidfd it first checks that pid still has the start time it had when found.
func (h handle) signal(e procEntry, sig unix.Signal) error {
	if h.fd >= 0 {
		return unix.PidfdSendSignal(h.fd, sig, nil, 0)
	}
	if now, err := readProc(e.pid); err != nil || now.start != e.start {
		return unix.ESRCH
	}
	return unix.Kill(e.pid, sig)
}

// unreaped reports whether the process still holds its pid: a live
// process or a zombie nobody has reaped.
func (h handle) unreaped(e procEntry) bool {
	err := h.signal(e, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

func (h handle) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

// waitable reports whether the handle can be waited on for its process's
// exit (see awaitExit).
func (h handle) waitable() bool { return h.fd >= 0 }

// awaitExit blocks until one of hs may have exited or ctx ends: a pidfd
// polls readable once its process exits. Unless every handle is a pidfd,
// it waits tick.
func awaitExit(ctx context.Context, hs []handle, tick time.Duration) {
	fds := make([]unix.PollFd, 0, len(hs))
	for _, h := range hs {
		if !h.waitable() {
			fds = nil
			break
		}
		fds = append(fds, unix.PollFd{Fd: int32(h.fd), Events: unix.POLLIN})
	}
	wait := tick
	if fds != nil {
		// Bounded, so that a cancelled ctx is seen within a second.
		wait = time.Second
	}
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(d), 0))
	}
	if fds == nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return
	}
	_, _ = unix.Poll(fds, int(wait.Milliseconds())+1)
}
