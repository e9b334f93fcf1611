//go:build unix

package main

import (
	"fmt"
	"syscall"
)

func sendSignal(pid int, name string) error {
	sigs := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1}
	sig, ok := sigs[name]
	if !ok {
		return fmt.Errorf("unknown signal %q", name)
	}
	return syscall.Kill(pid, sig)
}

// underWine is set when the tests run under Wine.
const underWine = false
