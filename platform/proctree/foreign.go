package proctree

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotSame reports a pid that, once pinned (OpenForeign, AwaitExit), no
// longer names the process the caller proved: it is left alone.
var ErrNotSame = errors.New("the process is not the one proven")

// foreignWalkRounds bounds the walks of one KillTree: each round stops or
// kills what it finds, so only a process forking just then can leave a
// child for the next.
const foreignWalkRounds = 32

// Foreign is a live process the caller did not start (Hermes' own detached
// gateway), pinned so that every action reaches that very process: a
// handle on Windows and a pidfd on Linux keep its pid from naming another;
// elsewhere its start time is read again before each signal.
type Foreign struct {
	pid int
	sys foreignSys
}

// OpenForeign pins pid and then asks same, which must re-prove from live
// facts (start time, command line) that pid is the process the caller
// means; it wraps ErrNotSame when same says no, ErrRefused for pid ≤ 1 or
// the caller itself, and returns a nil Foreign and no error when the
// process is already gone.
func OpenForeign(pid int, same func() bool) (*Foreign, error) {
	return openProven(pid, pinToStop, same)
}

// AwaitExit waits until process pid, one this process did not start,
// exits, or ctx ends. It pins pid as OpenForeign does, with only the
// right to wait (a pidfd on Linux, a process handle on Windows), and only
// then asks same whether pid is still the process the caller proved: a pid
// reused before the pin was taken is refused (false: ErrNotSame), and once
// held the pin follows that very process. A process already gone is nil.
// It wraps errors.ErrUnsupported where no such handle exists (macOS, Linux
// before 5.3): callers then poll.
func AwaitExit(ctx context.Context, pid int, same func() bool) error {
	f, err := openProven(pid, pinToWait, same)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	return f.wait(ctx)
}

// pinUse is what a pin must allow: everything OpenForeign's actions need,
// or only a wait, which a process of another account or integrity level
// may grant where it refuses a stop (Windows).
type pinUse int

const (
	pinToStop pinUse = iota
	pinToWait
)

// openProven pins pid for use, then asks same; a process already gone is
// a nil Foreign and no error. A pin to wait wraps errors.ErrUnsupported
// where the pin cannot be waited on.
func openProven(pid int, use pinUse, same func() bool) (*Foreign, error) {
	if err := refuse(pid); err != nil {
		return nil, err
	}
	f, err := openForeign(pid, use)
	if err != nil || f == nil {
		return nil, err
	}
	if !same() {
		f.Close()
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNotSame)
	}
	return f, nil
}

// PID returns the pinned process's pid.
func (f *Foreign) PID() int { return f.pid }

// Terminate asks the process to stop: SIGTERM on POSIX; nothing on
// Windows, where a detached gateway ignores console events and the
// planned-stop marker written before is the request.
func (f *Foreign) Terminate() error { return f.terminate() }

// Wait waits until the process has exited (a zombie counts) or ctx ends.
func (f *Foreign) Wait(ctx context.Context) error { return f.wait(ctx) }

// KillTree kills the process and every descendant found by parent links,
// each pinned before it is judged: a child counts only if it started no
// earlier than its parent while the parent still held its pid, so a stale
// parent link never names a stranger. The root is stopped (POSIX) or
// killed first so it cannot start more, and the walk is repeated until it
// finds nothing new. A descendant spare reports true for (pinned, so its
// pid is its own) is neither signalled nor walked below: one that runs as
// another user, say, whom the caller's own rules could not signal. nil
// spares none. It returns the pids it killed.
func (f *Foreign) KillTree(spare func(pid int) bool) ([]int, error) { return f.killTree(spare) }

// Close releases the pins.
func (f *Foreign) Close() { f.close() }
