package proctree

import (
	"errors"

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
