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

func (t *Tree) start() error {
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	t.cmd.SysProcAttr.Setpgid = true
	t.cmd.SysProcAttr.Pgid = 0
	return t.cmd.Start()
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

// KillGroup kills the process group led by pid, for a gateway we started but
// are no longer the parent of. The caller must have just verified that pid
// is alive and is that leader: while the leader lives its group id cannot
// belong to anyone else.
func KillGroup(pid int) error {
	err := unix.Kill(-pid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EPERM) {
		// Not a group leader after all (started by an older version, or
		// it left its group): kill the process alone.
		err = unix.Kill(pid, unix.SIGKILL)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	return nil
}

// KillLeftovers kills what remains of the process group of pid after pid
// itself exited, for a gateway we are not the parent of. POSIX keeps a
// group id from being reused while the group has members; the number can
// only name someone else's group if a new process took the pid, so a pid in
// use leaves the group alone.
func KillLeftovers(pid int) error {
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		return nil
	}
	err := unix.Kill(-pid, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill leftovers of process group %d: %w", pid, err)
	}
	return nil
}

// ProcessGroup returns the process group of pid. Every gateway the
// supervisor starts leads its own group; its helpers share it.
func ProcessGroup(pid int) (int, error) {
	return unix.Getpgid(pid)
}
