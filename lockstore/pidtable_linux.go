package lockstore

import (
	"context"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// listPIDs lists /proc, as p lists it; a pid missing from it is dead
// once kill(pid, 0) says so too.
func listPIDs(ctx context.Context, p *procstate.Prober) (func(int) bool, bool) {
	ps, err := p.Pids(ctx)
	if err != nil {
		return nil, false
	}
	listed := make(map[int]bool, len(ps))
	for _, pid := range ps {
		listed[pid] = true
	}
	return func(pid int) bool { return !listed[pid] && !p.Exists(pid) }, true
}
