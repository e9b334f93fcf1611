package procstate

import (
	"context"
	"errors"
	"fmt"
)

// owner: a Windows process has an owner SID, not a uid.
func owner(_ context.Context, pid int) (Owner, error) {
	return Owner{}, fmt.Errorf("pid %d: no uid on Windows: %w", pid, errors.ErrUnsupported)
}
