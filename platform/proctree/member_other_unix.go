//go:build unix && !linux

package proctree

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// handle: no pidfds here, so the start time is checked again just before
// each signal; a pid reused within that instant is the limit left.
type handle struct{}

func openHandle(int) handle { return handle{} }

func (handle) signal(e procEntry, sig unix.Signal) error {
	if now, err := readProc(e.pid); err != nil || now.start != e.start {
		return unix.ESRCH
	}
	return unix.Kill(e.pid, sig)
}

func (h handle) unreaped(e procEntry) bool {
	err := h.signal(e, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

func (handle) close() {}

// waitable: no handle here can be waited on for another process's exit.
func (handle) waitable() bool { return false }

// awaitExit waits tick, or until ctx ends (see waitable).
func awaitExit(ctx context.Context, _ []handle, tick time.Duration) {
	t := time.NewTimer(tick)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
