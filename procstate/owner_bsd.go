//go:build !linux && !darwin && !windows

package procstate

import (
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v4/process"
)

// owner asks gopsutil, which gives real, effective and saved uid here.
func owner(ctx context.Context, pid int) (Owner, error) {
	uids, err := (&process.Process{Pid: int32(pid)}).UidsWithContext(ctx)
	switch {
	case err != nil:
		return Owner{}, classify(pid, err)
	case len(uids) < 2:
		return Owner{}, fmt.Errorf("pid %d: %d uids, want real and effective", pid, len(uids))
	}
	return Owner{Real: int(uids[0]), Effective: int(uids[1])}, nil
}
