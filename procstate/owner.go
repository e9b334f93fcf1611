package procstate

import (
	"context"
	"fmt"
)

// Owner is who a process runs as: its real and effective uid.
type Owner struct{ Real, Effective int }

// String names both uids, or one where they agree.
func (o Owner) String() string {
	if o.Real == o.Effective {
		return fmt.Sprintf("uid %d", o.Real)
	}
	return fmt.Sprintf("uid %d (effective %d)", o.Real, o.Effective)
}

// Owner returns who pid runs as. It wraps ErrNoProcess when no process has
// the pid, and errors.ErrUnsupported where processes have no uid
// (Windows, whose owners are SIDs).
func (p *Prober) Owner(ctx context.Context, pid int) (Owner, error) { return owner(ctx, pid) }
