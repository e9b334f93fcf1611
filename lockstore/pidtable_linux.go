package lockstore

import (
	"context"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// listPIDs is the names of /proc, as p lists them.
func listPIDs(ctx context.Context, p *procstate.Prober) (map[int]bool, bool) {
	ps, err := p.Pids(ctx)
	if err != nil {
		return nil, false
	}
	out := make(map[int]bool, len(ps))
	for _, pid := range ps {
		out[pid] = true
	}
	return out, true
}
