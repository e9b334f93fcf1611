package proctree

import (
	"context"
	"sync"
	"time"
)

// reapSettle is how long a reap that nothing waits for is put off: orphan
// reaping after a SIGCHLD, and a Tree's root after Wait returned. Longer
// than a restart takes, so that the restart never waits behind it; short
// enough that a zombie never lingers.
const reapSettle = 20 * time.Millisecond

// Reaper is the supervisor as child subreaper (Linux ≥ 3.4, with pidfds
// from 5.3): every process orphaned inside a Tree started with it, in
// whatever session or group, is re-parented to us instead of to init. Such
// an orphan is then found and killed with its tree, and reaped once it
// exits. A process with a Reaper must start children only as Trees: any
// other child of ours is taken for an orphan of a tree.
type Reaper struct {
	mu    sync.Mutex
	roots map[int]int // pids of the Trees' roots we started and have not reaped
	//lint:ignore U1000 used on Linux only
	kids kidsFile // our main thread's children list, kept open
}

// BecomeSubreaper makes this process a child subreaper and returns the
// Reaper that tracks its Trees; off Linux it returns an error wrapping
// errors.ErrUnsupported.
func BecomeSubreaper() (*Reaper, error) { return newReaper() }

// Reaped is an orphan of a tree that the Reaper reaped.
type Reaped struct {
	PID  int
	Name string // the kernel's short name for it, untrusted
	How  string // "exit 3", "signal SIGKILL"
}

// Reap reaps every exited child of ours that is not the root of a Tree:
// the orphans of our trees, which nobody else waits for.
func (r *Reaper) Reap() []Reaped {
	if r == nil {
		return nil
	}
	return r.reap()
}

// Run reaps orphans whenever a child exits, until ctx ends; each reaped
// orphan is passed to reaped.
func (r *Reaper) Run(ctx context.Context, reaped func(Reaped)) {
	if r == nil {
		return
	}
	r.run(ctx, reaped)
}

// started records root as a Tree's root, so it is never taken for an orphan.
func (r *Reaper) started(root int) { r.roots[root]++ }

func (r *Reaper) reaped(root int) {
	if r.roots[root]--; r.roots[root] <= 0 {
		delete(r.roots, root)
	}
}
