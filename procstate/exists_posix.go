//go:build linux || darwin

package procstate

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processExists is kill(pid, 0), which sends nothing: only ESRCH says no
// process has pid; EPERM is another user's.
func processExists(pid int) bool { return !errors.Is(unix.Kill(pid, 0), unix.ESRCH) }
