package platform

import (
	"os"
	"os/exec"
	"sync"
)

// Tree is a started child process and every process it spawns.
type Tree struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	reaped bool
	//lint:ignore U1000 empty on POSIX; the job object on Windows
	sys treeSys
}

// StartTree starts cmd as the root of a new process tree: its own process
// group on POSIX, a kill-on-close job object on Windows.
func StartTree(cmd *exec.Cmd) (*Tree, error) {
	t := &Tree{cmd: cmd}
	if err := t.start(); err != nil {
		return nil, err
	}
	return t, nil
}

// Pid returns the root's pid.
func (t *Tree) Pid() int { return t.cmd.Process.Pid }

// Signal sends sig to the root only.
func (t *Tree) Signal(sig os.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return nil
	}
	return t.signalRoot(sig)
}

// Kill ends every process of the tree at once; killing a finished tree is a
// no-op, so a reused pid or group is never hit.
func (t *Tree) Kill() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return nil
	}
	return t.killTree()
}

// Wait waits for the root to exit, kills whatever remains of its tree,
// reaps the root and releases OS handles; it returns what cmd.Wait returns.
func (t *Tree) Wait() error {
	t.waitExited()
	t.mu.Lock()
	_ = t.killTree()
	t.reaped = true
	t.mu.Unlock()
	err := t.cmd.Wait()
	t.release()
	return err
}
