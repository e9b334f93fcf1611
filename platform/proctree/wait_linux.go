package proctree

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the root has exited without reaping it, so that
// its pid and process group stay reserved while the rest of the tree is
// killed. waitid reports the exit of a whole thread group only, once its
// last thread is gone and its children were re-parented: the walks after
// it skip the root (see treeSys.rootExited).
func (t *Tree) waitExited() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil {
			t.mu.Lock()
			t.sys.rootExited = true
			t.mu.Unlock()
		}
		return
	}
}
