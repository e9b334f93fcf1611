//go:build unix

package platform

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

type treeSys struct{}

const membershipProvesOwnership = false

func (t *Tree) start(in *Cgroups) error {
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	t.cmd.SysProcAttr.Setpgid = true
	t.cmd.SysProcAttr.Pgid = 0
	return t.startIn(in)
}

// Terminate asks the root to stop gracefully with SIGTERM.
func (t *Tree) Terminate() error { return t.Signal(unix.SIGTERM) }

func (t *Tree) signalRoot(sig os.Signal) error {
	err := t.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// killTree signals the group. The root is unreaped whenever this runs, so
// the group id cannot have been handed to anyone else.
func (t *Tree) killTree() error {
	err := unix.Kill(-t.cmd.Process.Pid, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", t.cmd.Process.Pid, err)
	}
	return nil
}

func (t *Tree) release() {}

// holds: the root is unreaped whenever this runs, so its group id is the
// tree's alone; same runs after the group check, and a pid that died in
// between fails it by its start time.
func (t *Tree) holds(pid int, same func() bool) bool {
	pg, err := unix.Getpgid(pid)
	return err == nil && pg == t.cmd.Process.Pid && same()
}

func (t *Tree) terminateMember(pid int) error {
	err := unix.Kill(pid, unix.SIGTERM)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("terminate process %d: %w", pid, err)
	}
	return nil
}

func killGroup(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	target := pid
	pg, err := unix.Getpgid(pid)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case err == nil && pg == pid && pg != unix.Getpgrp():
		// pid is alive and leads the group, so the group id cannot be
		// anyone else's: it is freed only once its leader is gone.
		target = -pid
	}
	err = unix.Kill(target, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %s %d: %w", map[bool]string{true: "process group", false: "process"}[target < 0], pid, err)
	}
	return nil
}

func killProcess(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	err := unix.Kill(pid, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	return nil
}

// ProcessGroup returns the process group of pid. Every gateway the
// supervisor starts leads its own group; its helpers share it.
func ProcessGroup(pid int) (int, error) {
	return unix.Getpgid(pid)
}
