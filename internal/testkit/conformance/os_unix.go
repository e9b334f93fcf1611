//go:build unix

package conformance

import "syscall"

const (
	exeSuffix = ""
	// hasSignals: processes can be stopped, and exited children linger as
	// zombies until reaped.
	hasSignals = true
	// isUnix: a process can be given any argv, argv[0] included, and a
	// path's ".." applies to where the links before it lead.
	isUnix = true
)

func stop(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }

func resume(pid int) { _ = syscall.Kill(pid, syscall.SIGCONT) }

// canUnlinkOpen: a file some process holds open can be unlinked.
const canUnlinkOpen = true
