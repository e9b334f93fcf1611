//go:build unix

package main

import (
	"errors"
	"fmt"
	"syscall"
)

func sendSignal(pid int, name string) error {
	sigs := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1,
		"STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP, "CONT": syscall.SIGCONT}
	sig, ok := sigs[name]
	if !ok {
		return fmt.Errorf("unknown signal %q", name)
	}
	if sig == syscall.SIGTSTP && orphanedGroup(pid) {
		// The kernel discards SIGTSTP to a process group no job control
		// can resume (orphaned: the tests run under setsid, or their
		// parent shell is gone), and no terminal could send it Ctrl-Z
		// there either: SIGSTOP is the stop that can happen. The wait
		// below then met no stop at all, or ECHILD (a CI run, hung until
		// its timeout with the supervisor never stopped).
		sig = syscall.SIGSTOP
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

// resume continues pid, whatever its state, waiting for nothing.
func resume(pid int) { _ = syscall.Kill(pid, syscall.SIGCONT) }

// awaitStopped waits until pid, a child of this test (the script's
// background exec), has stopped (or, !want, continued): a stop signal
// takes effect after kill returns, and what the script does next must
// meet the process in its new state. wait4 reports exactly that event,
// and reaps nothing of a child that only stopped or continued.
func awaitStopped(pid int, want bool) error {
	opts := syscall.WUNTRACED
	if !want {
		opts = syscall.WCONTINUED
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, opts, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("wait for pid %d to stop (%v): %w", pid, want, err)
		case got == pid && (ws.Exited() || ws.Signaled()):
			return fmt.Errorf("pid %d ended while awaited to stop (%v): %v", pid, want, ws)
		case got == pid && ws.Stopped() == want:
			return nil
		case got == pid && !want && ws.Continued():
			return nil
		}
	}
}

// underWine is set when the tests run under Wine.
const underWine = false
