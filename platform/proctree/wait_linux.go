package proctree

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the root has exited without reaping it, so that
// its pid and process group stay reserved while the rest of the tree is
// killed. waitid reports the exit of a whole thread group only, once its
// last thread is gone and its children were re-parented: the walks after
// it skip the root (see treeSys.rootExited).
func (t *Tree) waitExited() {
	if !t.pollExited() && !t.blockExited() {
		return
	}
	t.mu.Lock()
	t.sys.rootExited = true
	t.mu.Unlock()
}

// pollExited waits on a pidfd of the root in Go's poller, which the root's
// exit wakes together with the EOF on its output pipes. A waitid blocking
// its own thread, as blockExited does, woke that thread, which then had
// to take a processor back and was often preempted at once as if it had
// run since it blocked: up to 100 µs of a restart here. The root is our
// unreaped child, so its pid cannot name another process while the pidfd
// is opened. It reports false, having waited for nothing, where pidfds
// or the poller are missing (Linux before 5.3).
func (t *Tree) pollExited() bool {
	fd, err := openPidfd(t.cmd.Process.Pid)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		var werr error
		exited, werr = pidfdExited(int(fd))
		return exited || werr != nil // on an error blockExited sees the same
	})
	// An fd the poller would not take makes Read fail at once: then the
	// exit is waited for on a thread.
	return err == nil && exited
}

// openPidfd opens a non-blocking pidfd of pid.
func openPidfd(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if !errors.Is(err, unix.EINVAL) {
		return fd, err
	}
	// Before Linux 5.10: no PIDFD_NONBLOCK, but the flag can be set.
	if fd, err = unix.PidfdOpen(pid, 0); err != nil {
		return -1, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// pidfdExited reports whether the process behind pidfd has exited, without
// reaping it.
func pidfdExited(pidfd int) (bool, error) {
	for {
		var info unix.Siginfo
		switch err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return false, nil
		case err != nil:
			return false, err
		default:
			return info.Signo != 0, nil // 0: still running, the kernel wrote no child
		}
	}
}

// blockExited is waitExited on a thread of its own, where there is no
// pidfd to poll; it reports whether the root exited.
func (t *Tree) blockExited() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}
