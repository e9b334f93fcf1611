//go:build !linux && !darwin

package procstate

import (
	"context"
	"slices"

	"github.com/shirou/gopsutil/v4/process"
)

// Hermes stores round(psutil create_time*100) here; gopsutil reads the same
// kernel clock but rounds independently, so allow a few centiseconds.
const defaultStartTolerance = 5

func readLive(ctx context.Context, pid int) (liveState, error) {
	exists, err := process.PidExistsWithContext(ctx, int32(pid))
	if err != nil {
		return liveState{}, classify(pid, err)
	}
	if !exists {
		return liveState{}, classify(pid, process.ErrorProcessNotRunning)
	}
	proc := &process.Process{Pid: int32(pid)}
	ms, err := proc.CreateTimeWithContext(ctx)
	if err != nil {
		return liveState{}, classify(pid, err)
	}
	cs := (ms + 5) / 10 // milliseconds to centiseconds, rounded like Hermes
	st := liveState{start: &cs}
	// Status is not implemented on Windows; there are no zombies to find.
	if s, err := proc.StatusWithContext(ctx); err == nil {
		st.zombie = slices.Contains(s, process.Zombie)
		st.stopped = slices.Contains(s, process.Stop)
	}
	return st, nil
}

// otherUser: gopsutil reports another user's process as not permitted.
func otherUser(error) bool { return false }

// pidZeroExists: pid 0 is a process here (kernel_task, the System Idle
// Process), which psutil reports alive.
const pidZeroExists = true

// processExists is gopsutil's PidExists, as readLive asks it; what it
// cannot tell counts as existing.
func processExists(pid int) bool {
	ok, err := process.PidExists(int32(pid))
	return ok || err != nil
}
