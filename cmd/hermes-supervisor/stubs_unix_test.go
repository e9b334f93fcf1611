//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// sentinelSignals are the catchable signals a supervisor could send: not
// SIGURG, which the Go runtime sends itself to preempt goroutines.
var sentinelSignals = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1,
	unix.SIGUSR2, unix.SIGABRT, unix.SIGALRM, unix.SIGCONT, unix.SIGTSTP}
