package proctree

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the root has exited without reaping it, so that
// its pid and process group stay reserved while the rest of the tree is
// killed.
func (t *Tree) waitExited() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
