//go:build unix

package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

func sendSignal(pid int, name string) error {
	sigs := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1,
		"STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP, "CONT": syscall.SIGCONT}
	sig, ok := sigs[name]
	if !ok {
		return fmt.Errorf("unknown signal %q", name)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP, syscall.SIGTSTP:
		return awaitStopped(pid, true)
	case syscall.SIGCONT:
		return awaitStopped(pid, false)
	}
	return nil
}

// awaitStopped waits until pid is stopped (or no longer is): a stop
// signal takes effect after kill returns, and what the script does next
// must meet the process in its new state.
func awaitStopped(pid int, want bool) error {
	// Polls with a deadline: the state changes in another process, with nothing to wait on here.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Glance(context.Background(), pid)
		if err != nil {
			return err
		}
		if l.Stopped == want {
			return nil
		}
	}
	return fmt.Errorf("pid %d: stopped is not %v after 30 s", pid, want)
}

// underWine is set when the tests run under Wine.
const underWine = false
