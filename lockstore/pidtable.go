package lockstore

import (
	"context"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// pidTableMin is how many pids a judgement must name before it lists the
// process table once rather than looking up each pid: a lock dir of
// stale files names thousands of dead pids, each a failed lookup. A dead
// pid's lookup fails in about 2 µs; listing /proc took 180 µs in a sweep
// on a quiet bench host (42 µs in a loop, its dentries warm), and more
// where more processes run. Below 128 pids, of which some are alive and
// looked at anyway, the listing costs more than it saves.
const pidTableMin = 128

// gone is what Prober.Look says of a pid no process has.
func gone(pid int) procFacts {
	return procFacts{live: procstate.Live{PID: pid}, err: procstate.NoProcess(pid)}
}

// deadByTable lists the pids of every process, where the OS lists them
// cheaply (the names of /proc on Linux), and returns whether a pid is
// dead by that listing; ok is false elsewhere, or when the listing fails.
// A pid missing from the list had no process when the listing ran (the
// files naming it were read before, so whoever wrote them had exited by
// then), once the OS confirms that no process has it: a /proc mounted
// with hidepid leaves other users' processes out of the list.
func deadByTable(ctx context.Context, p *procstate.Prober) (dead func(pid int) bool, ok bool) {
	return listPIDs(ctx, p)
}
