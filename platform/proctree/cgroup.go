package proctree

import (
	"context"
	"errors"
	"time"
)

// ErrNoCgroup reports that no cgroup is delegated to this process: the
// gateway's tree is then held by its process group (job object on
// Windows) alone.
var ErrNoCgroup = errors.New("no cgroup is delegated to this process")

// Cgroups is the cgroup a service manager delegated to the supervisor
// (Linux, cgroup v2: systemd with Delegate=yes). The supervisor has moved
// itself into its child "supervisor"; each gateway tree gets a child of its
// own next to it, so that whatever the gateway leaves behind, in a session
// of its own or not, is taken down when it exits. Membership of a cgroup we
// created under ours is the proof that a process is the gateway's: no file
// can forge it, and nothing outside it is ever signalled.
type Cgroups struct {
	dir      string // the delegated cgroup's directory
	evidence string // how delegation was proven, for the log
	//lint:ignore U1000 empty off Linux; the cgroup's path and test switches on Linux
	sys cgroupsSys
}

// DelegatedCgroups finds the cgroup delegated to us and moves the
// supervisor into its child "supervisor", as systemd asks of a delegated
// service (no processes in inner cgroups). Delegation must be proven:
// cgroup v2, our own cgroup not the root, and systemd's mark on it
// (trusted.delegate, or user.delegate on a cgroup we own) or, for a unit
// of a user manager (which marks nothing), that manager's Delegate=yes for
// the unit whose cgroup is ours. Anything else (a shell, a container, a
// unit without Delegate=yes, another OS) returns an error wrapping
// ErrNoCgroup that says why, and changes nothing; off Linux it also wraps
// errors.ErrUnsupported.
func DelegatedCgroups(ctx context.Context) (*Cgroups, error) { return delegatedCgroups(ctx) }

// String is the delegated cgroup's directory.
func (c *Cgroups) String() string { return c.dir }

// Evidence says how the delegation was proven.
func (c *Cgroups) Evidence() string { return c.evidence }

// Leftovers is what Wait found and killed in the tree's cgroup, and
// outside it, once its root had exited.
type Leftovers struct {
	// Exited is when Wait saw the root exit, before it killed what was
	// left: the start of a restart, for the timing the supervisor logs.
	Exited time.Time
	// Cgroup is the tree's cgroup; empty when it had none.
	Cgroup string
	// PIDs are the processes that were still in it (the root is not), all
	// killed with it.
	PIDs []int
	// Adopted are the processes outside the cgroup and the process group,
	// found by parent links or re-parented to us (see Reaper), that were
	// killed with the tree.
	Adopted []int
	// Unkilled are the processes of the tree still alive when Wait gave
	// up on them: SIGKILL does not end a process frozen by a cgroup
	// freezer, stuck in the kernel, or become another user's.
	Unkilled []Unkilled
	// Err says what failed: the kill, or emptying and removing the cgroup
	// before the context ended (it is then left in place, and the next
	// tree gets a cgroup of another name).
	Err error
}

// cgroupEmptyWait bounds how long Wait waits for a tree's cgroup to empty
// once its root has exited: killed processes leave at once, unless one is
// stuck in the kernel (then the cgroup is left, and named in Leftovers).
const cgroupEmptyWait = 5 * time.Second

// cgroupKillWait bounds a kill that must freeze the cgroup first (kernels
// before 5.14 have no cgroup.kill): a frozen cgroup cannot fork while its
// members are read and killed one by one.
const cgroupKillWait = 2 * time.Second

// Cgroup names the cgroup the tree runs in, "" when it runs in none. The
// error, when one was asked for, says why the tree has none (it then
// relies on its process group), or, with a name, that the root could only
// be moved in after it started (clone3 refused CLONE_INTO_CGROUP).
func (t *Tree) Cgroup() (string, error) {
	if t.cg == nil {
		return "", t.cgErr
	}
	return t.cg.dir, t.cgErr
}

// killCgroup kills every process of the tree's cgroup, the root with them.
func (t *Tree) killCgroup() error {
	if t.cg == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cgroupKillWait)
	defer cancel()
	return t.cg.kill(ctx)
}

// sweepCgroup kills what is left in the cgroup of a tree whose root has
// exited, and says what that was. Wait calls it only for a tree in a
// cgroup.
func (t *Tree) sweepCgroup(ctx context.Context) Leftovers {
	l := Leftovers{Cgroup: t.cg.dir}
	pids, err := t.cg.members()
	for _, pid := range pids {
		if pid != t.cmd.Process.Pid {
			l.PIDs = append(l.PIDs, pid)
		}
	}
	kctx, cancel := context.WithTimeout(ctx, cgroupKillWait)
	defer cancel()
	l.Err = errors.Join(err, t.cg.kill(kctx))
	return l
}
