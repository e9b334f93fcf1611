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
