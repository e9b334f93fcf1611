package platform

import (
	"errors"
	"fmt"
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

// ErrRefused reports a signal the platform refuses to send whatever the
// caller proved: to pid 0 or 1 (kill(-1) reaches every process of the
// user), to a negative pid, or to the supervisor itself.
var ErrRefused = errors.New("refusing to signal this process")

func refuse(pid int) error {
	if pid <= 1 || pid == os.Getpid() {
		return fmt.Errorf("kill %d: %w", pid, ErrRefused)
	}
	return nil
}

// KillGroup kills pid with SIGKILL, and its whole process group when the
// pid is alive and leads one (checked just before the kill, never assumed).
// It is for a gateway we started but are no longer the parent of; the
// caller must have just proven pid is that gateway. It refuses pid ≤ 1
// and the supervisor itself with ErrRefused.
func KillGroup(pid int) error { return killGroup(pid) }

// KillProcess kills pid alone with SIGKILL, with KillGroup's refusals.
func KillProcess(pid int) error { return killProcess(pid) }

// Holds reports whether pid is a process of the tree (its job object on
// Windows, its process group on POSIX) and same, asked while the pid cannot
// name another process, agrees it is the one the caller means. A console
// launcher (pip's and uv's hermes.exe) runs the gateway as its child, so
// the gateway is found this way rather than by the root's pid.
func (t *Tree) Holds(pid int, same func() bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped || pid <= 0 {
		return false
	}
	return t.holds(pid, same)
}

// TerminateMember asks pid, a process of the tree other than the root, to
// stop as Terminate asks the root, after Holds(pid, same) proves it; on
// Windows it does nothing, as Terminate does.
func (t *Tree) TerminateMember(pid int, same func() bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped || pid <= 0 || pid == t.cmd.Process.Pid || !t.holds(pid, same) {
		return nil
	}
	return t.terminateMember(pid)
}
