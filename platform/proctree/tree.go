package proctree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Tree is a started child process and every process it spawns.
type Tree struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	waited bool // Wait has begun
	reaped bool
	//lint:ignore U1000 empty on POSIX; the job object on Windows
	sys    treeSys
	cg     *treeCgroup   // the tree's own cgroup; nil when it has none
	cgErr  error         // why it has none, or was moved in late, when one was asked for
	reaper *Reaper       // nil unless we are a child subreaper
	gone   chan struct{} // closed once the root is reaped
	// beforeReap, when set (by tests), runs as the reap begins.
	beforeReap func()
}

// Start starts cmd as the root of a new process tree: its own process
// group on POSIX, a kill-on-close job object on Windows, and on Linux, when
// in is not nil, a cgroup of its own under in, which the root is cloned
// straight into (see Cgroup for when that fails). With in set, cmd's
// standard files must be nil or *os.File of the caller's own (not from
// StdoutPipe and the like): should clone3 refuse the cgroup, exec refuses
// a second Start of cmd, and a copy of it is started instead. With r set
// (we are a child subreaper), the orphans of the tree are ours: Kill and
// Wait find and kill them too.
func Start(cmd *exec.Cmd, in *Cgroups, r *Reaper) (*Tree, error) {
	t := &Tree{cmd: cmd, reaper: r, gone: make(chan struct{})}
	if r != nil {
		// Until the root is recorded, the Reaper must not take it for an
		// orphan: it could reap it under exec's feet.
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	if err := t.start(in); err != nil {
		return nil, err
	}
	if r != nil {
		r.started(t.cmd.Process.Pid)
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

// Kill ends every process of the tree at once: its cgroup, the root, its
// process group, and on POSIX every process found from the root by parent
// links, or re-parented to us as an orphan of the tree (see Reaper), each
// stopped as found so that none can fork away, then killed. Killing a
// finished tree is a no-op, so a reused pid or group is never hit.
func (t *Tree) Kill() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return nil
	}
	return errors.Join(t.killCgroup(), t.killTree())
}

// Wait waits for the root to exit, kills whatever remains of its tree (its
// cgroup, then its process group), waits until its cgroup is empty and
// removes it and until every process the kills found is gone (for up to
// cgroupEmptyWait after the root exited, or until ctx ends), and has the
// root reaped and OS handles released. It returns what was left in the
// cgroup and what survived the kill, and how the root ended: nil for exit
// status 0, an *ExitError, or why it could not be waited for. The root
// stays unreaped until the rest is killed, so that its pid and group
// cannot name anyone else meanwhile.
//
// Where the kernel told how the root ended without reaping it (a pidfd's
// waitid, Linux 5.3 and later) and exec's own Wait has nothing to wait
// for but the process (standard files nil or *os.File, no Cancel, no
// WaitDelay), Wait returns once the tree is dead, and the root is reaped
// reapSettle later, on a goroutine of its own: the reap frees the whole
// process in the kernel, 40 to 50 µs here, which a restart then no longer
// waits for. The zombie holds the root's pid and group until then.
// Elsewhere Wait reaps the root before it returns.
func (t *Tree) Wait(ctx context.Context) (Leftovers, error) {
	t.mu.Lock()
	again := t.waited
	t.waited = true
	t.mu.Unlock()
	if again {
		// A second Wait must not walk and kill again: once the root is
		// reaped, its pid and group may be anyone's.
		<-t.gone
		return Leftovers{}, ErrWaited
	}
	known, status := t.waitExited()
	exited := time.Now()
	bound := &lazyDeadline{parent: ctx, at: exited.Add(cgroupEmptyWait)}
	defer bound.stop()
	t.mu.Lock()
	var left Leftovers
	if t.cg != nil {
		left = t.sweepCgroup(bound.get())
	}
	left.Exited = exited
	_ = t.killTree()
	t.mu.Unlock()
	// Not under the lock: Kill and Signal stay quick while the kernel
	// empties the cgroup, and are harmless on a root that has exited.
	if t.cg != nil {
		left.Err = errors.Join(left.Err, t.cg.empty(bound.get()))
	}
	t.awaitKilled(bound.get)
	t.mu.Lock()
	// Named before the handles go: a process SIGKILL cannot end (frozen,
	// stuck in the kernel, another user's) must be said, never left
	// silently beside the next gateway.
	left.Unkilled = t.survivors()
	for _, pid := range t.adopted() {
		if !slices.ContainsFunc(left.Unkilled, func(u Unkilled) bool { return u.PID == pid }) {
			left.Adopted = append(left.Adopted, pid)
		}
	}
	t.reaped = true
	t.mu.Unlock()
	if t.cg != nil {
		t.cg.close()
	}
	if known && waitsForNothingElse(t.cmd) {
		// Not at once: a goroutine made now runs on this thread as soon
		// as the caller blocks, before the caller's restart.
		time.AfterFunc(reapSettle, func() { _ = t.reap() })
		return left, status
	}
	return left, exitError(t.reap())
}

// reap reaps the root, strikes it off the Reaper's roots and releases the
// tree's handles; it returns what cmd.Wait returns.
func (t *Tree) reap() error {
	defer close(t.gone)
	if t.beforeReap != nil {
		t.beforeReap()
	}
	if t.reaper != nil {
		// The Reaper must not see the root's pid free, and a new child of
		// ours with it, before the root is struck off.
		t.reaper.mu.Lock()
	}
	err := t.cmd.Wait()
	if t.reaper != nil {
		t.reaper.reaped(t.cmd.Process.Pid)
		t.reaper.mu.Unlock()
	}
	t.mu.Lock()
	t.release()
	t.mu.Unlock()
	return err
}

// waitsForNothingElse reports whether cmd.Wait has nothing to wait for,
// and nothing to report, but the process: with standard files nil or
// *os.File the child writes and reads them itself, and exec runs no
// goroutine whose copying Wait would end; without Cancel and WaitDelay,
// Wait returns no error of a context's or a deadline's.
func waitsForNothingElse(cmd *exec.Cmd) bool {
	if cmd.Cancel != nil || cmd.WaitDelay != 0 {
		return false
	}
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f.(type) {
		case nil, *os.File:
		default:
			return false
		}
	}
	return true
}

// ErrWaited reports a second Wait on a Tree.
var ErrWaited = errors.New("proctree: Wait was already called")

// ExitError is a root that exited with a non-zero status or was ended by
// a signal.
type ExitError struct {
	Code   int            // the exit status; -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it; 0 when it exited
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "signal: " + e.Signal.String()
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// exitError is err from cmd.Wait with an *exec.ExitError made an
// *ExitError, and any other error as it is.
func exitError(err error) error {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &ExitError{Code: -1, Signal: ws.Signal()}
	}
	return &ExitError{Code: ee.ExitCode()}
}

// Unkilled is a process of a tree still alive after the tree was killed.
type Unkilled struct {
	PID  int    `json:"pid"`
	Name string `json:"name,omitempty"` // the kernel's short name for it, untrusted
	Why  string `json:"why"`
}

// Survivors lists the processes of the tree that Kill found and that are
// still alive (zombies are dead), the root first, each with why it may
// have survived: the kill's error (EPERM for one that became another
// user's), or its state (D: stuck in the kernel).
func (t *Tree) Survivors() []Unkilled {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return nil
	}
	return t.survivors()
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

// MembershipProvesOwnership says whether Holds proves a process ours with
// no other fact about it (same may then merely read the process): true on
// Windows, where a job object takes in only the descendants of the
// process started in it, and the pid is asked about holding a handle that
// keeps it from naming another process; false on POSIX, where any process
// of the session may join a process group, and a pid is asked about
// without such a handle.
const MembershipProvesOwnership = membershipProvesOwnership

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

// Terminate asks the root to stop gracefully: SIGTERM on Unix. On Windows
// it does nothing: the gateway ignores console events when detached, so
// the planned-stop marker written before is the request.
func (t *Tree) Terminate() error { return t.terminate() }

// InLeadersGroup reports whether pid is in the process group that leader
// leads, within the session leader leads. Every gateway the supervisor
// starts leads its own session and group, so only its descendants can be
// in both; a process of another session that joined the group (possible
// only while the gateway shares that session) is not. False on Windows.
func InLeadersGroup(pid, leader int) bool { return inLeadersGroup(pid, leader) }

// ProcessGroup returns the process group of pid. Every gateway the
// supervisor starts leads its own group; its helpers share it. On Windows,
// where a gateway's tree is a job object that dies with the supervisor that
// made it, it returns errors.ErrUnsupported.
func ProcessGroup(pid int) (int, error) { return processGroup(pid) }

// lazyDeadline is parent bounded by the deadline at, its timer armed only
// when a wait first asks for it: Wait waits on no cgroup and no killed
// process after most exits, and a timer armed on every exit woke the
// runtime's poller on each restart's path.
type lazyDeadline struct {
	parent context.Context
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *lazyDeadline) get() context.Context {
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithDeadline(l.parent, l.at)
	}
	return l.ctx
}

func (l *lazyDeadline) stop() {
	if l.cancel != nil {
		l.cancel()
	}
}
