//go:build unix && !linux

package proctree

import (
	"golang.org/x/sys/unix"
)

// waitExited blocks until the root has exited without reaping it, using a
// kqueue NOTE_EXIT event, so its process group stays reserved while the
// rest of the tree is killed. If kqueue fails, the group is killed after
// the reap instead, which leaves a small pid-reuse window. How the root
// ended is left to the reap (known is false).
func (t *Tree) waitExited() (known bool, status error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return false, nil
	}
	defer unix.Close(kq)
	ev := unix.Kevent_t{}
	unix.SetKevent(&ev, t.cmd.Process.Pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{ev}, out, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return false, nil
		}
	}
}
