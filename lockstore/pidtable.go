package lockstore

import (
	"context"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// pidTableMin is how many pids a judgement must name before it lists the
// process table once rather than looking up each pid: a lock dir of
// stale files names thousands of dead pids, each a failed lookup.
const pidTableMin = 32

// gone is what Prober.Look says of a pid no process has.
func gone(pid int) procFacts {
	return procFacts{live: procstate.Live{PID: pid}, err: procstate.NoProcess(pid)}
}

// livePIDs lists the pids of every process, where the OS lists them
// cheaply (the names of /proc on Linux); ok is false elsewhere, or when
// the listing fails. A pid missing from the list had no process when the
// listing ran: the files naming it were read before, so whoever wrote
// them had exited by then.
func livePIDs(ctx context.Context, p *procstate.Prober) (pids map[int]bool, ok bool) {
	return listPIDs(ctx, p)
}
