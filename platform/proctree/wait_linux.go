package proctree

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the root has exited without reaping it, so that
// its pid and process group stay reserved while the rest of the tree is
// killed. waitid reports the exit of a whole thread group only, once its
// last thread is gone and its children were re-parented: the walks after
// it skip the root (see treeSys.rootExited). known says whether status,
// how the root ended, was read from what waitid said (see Wait).
//
// Only a pidfd's waitid (Linux 5.3 and later) is taken at its word: a
// kernel old enough to lack pidfds may report the exit status of the
// root's main thread, where the reap reports the whole group's.
func (t *Tree) waitExited() (known bool, status error) {
	info, pidfd, polled := t.pollExited()
	if !polled && !t.blockExited() {
		return false, nil
	}
	t.mu.Lock()
	t.sys.rootExited = true
	// Closed with the tree's handles, after the reap: closing it here took
	// the poller's and the kernel's bookkeeping onto the restart's path.
	t.sys.exitWatch = pidfd
	t.mu.Unlock()
	if !polled {
		return false, nil
	}
	return childStatus(&info, t.cmd.Process.Pid)
}

// sigchldAt is where the kernel's siginfo union (here its _sigchld: pid,
// uid, status) begins: after si_signo, si_errno and si_code, aligned as
// its members that hold pointers are, at 16 bytes on 64-bit Linux and 12
// on 32-bit. x/sys leaves the union as padding.
const sigchldAt = (12 + unsafe.Sizeof(uintptr(0)) - 1) / unsafe.Sizeof(uintptr(0)) * unsafe.Sizeof(uintptr(0))

// si_code of a SIGCHLD (asm-generic/siginfo.h), which x/sys does not name.
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// childStatus reads how child pid ended from info, as waitid filled it:
// si_code says whether it exited (si_status is then its exit status) or
// a signal ended it (si_status is the signal). known is false for an
// info that is not pid's exit.
func childStatus(info *unix.Siginfo, pid int) (known bool, status error) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(info)), unsafe.Sizeof(*info))
	who := int32(binary.NativeEndian.Uint32(b[sigchldAt:]))
	st := int32(binary.NativeEndian.Uint32(b[sigchldAt+8:]))
	if info.Signo != int32(unix.SIGCHLD) || int(who) != pid {
		return false, nil
	}
	switch info.Code {
	case cldExited:
		if st == 0 {
			return true, nil
		}
		return true, &ExitError{Code: int(st)}
	case cldKilled, cldDumped:
		return true, &ExitError{Code: -1, Signal: syscall.Signal(st)}
	}
	return false, nil
}

// pollExited waits on a pidfd of the root in Go's poller, which the root's
// exit wakes together with the EOF on its output pipes. A waitid blocking
// its own thread, as blockExited does, woke that thread, which then had
// to take a processor back and was often preempted at once as if it had
// run since it blocked: up to 100 µs of a restart here. The root is our
// unreaped child, so its pid cannot name another process while the pidfd
// is opened. It reports false, having waited for nothing, where pidfds
// or the poller are missing (Linux before 5.3). When it reports true, the
// caller closes the pidfd it returns.
func (t *Tree) pollExited() (unix.Siginfo, *os.File, bool) {
	var info unix.Siginfo
	fd, err := openPidfd(t.cmd.Process.Pid)
	if err != nil {
		return info, nil, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return info, nil, false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		var werr error
		info, exited, werr = pidfdExited(int(fd))
		return exited || werr != nil // on an error blockExited sees the same
	})
	// An fd the poller would not take makes Read fail at once: then the
	// exit is waited for on a thread.
	if err != nil || !exited {
		f.Close()
		return info, nil, false
	}
	return info, f, true
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

// pidfdExited reports whether the process behind pidfd has exited, and
// what waitid said of it, without reaping it.
func pidfdExited(pidfd int) (unix.Siginfo, bool, error) {
	for {
		var info unix.Siginfo
		switch err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return info, false, nil
		case err != nil:
			return info, false, err
		default:
			return info, info.Signo != 0, nil // 0: still running, the kernel wrote no child
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
