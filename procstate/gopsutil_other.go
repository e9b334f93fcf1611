//go:build !linux

package procstate

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/shirou/gopsutil/v4/process"
)

// Off Linux gopsutil reads what /proc gives on Linux (procfs_linux.go).

func environ(ctx context.Context, pid int) ([]string, error) {
	env, err := (&process.Process{Pid: int32(pid)}).EnvironWithContext(ctx)
	if err != nil {
		return nil, classify(pid, err)
	}
	return env, nil
}

func pids(ctx context.Context) ([]int, error) {
	ps, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ps))
	for i, pid := range ps {
		out[i] = int(pid)
	}
	return out, nil
}

func cmdline(ctx context.Context, pid int) ([]string, error) {
	argv, err := (&process.Process{Pid: int32(pid)}).CmdlineSliceWithContext(ctx)
	if err != nil {
		return nil, classify(pid, err)
	}
	return argv, nil
}

// createTime is pid's create time in milliseconds since the epoch.
func createTime(ctx context.Context, pid int) (int64, error) {
	ms, err := (&process.Process{Pid: int32(pid)}).CreateTimeWithContext(ctx)
	if err != nil {
		return 0, classify(pid, err)
	}
	return ms, nil
}

// classify maps gopsutil and OS errors onto this package's sentinels.
func classify(pid int, err error) error {
	switch {
	case errors.Is(err, process.ErrorProcessNotRunning), errors.Is(err, os.ErrNotExist):
		return NoProcess(pid)
	case errors.Is(err, process.ErrorNotPermitted), errors.Is(err, os.ErrPermission):
		return fmt.Errorf("pid %d: %w", pid, ErrPermission)
	case otherUser(err):
		return fmt.Errorf("pid %d belongs to another user: %w", pid, ErrPermission)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}
