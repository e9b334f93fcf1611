//go:build !linux

package procstate

import (
	"context"
	"slices"
	"time"

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

// year2000 is 2000-01-01 in centiseconds since the epoch.
const year2000 = 946_684_800 * 100

// compareStart: Hermes records round(psutil create_time*100), and gopsutil
// reads the create time in milliseconds and rounds on its own, so the two
// may be one centisecond apart. A recorded value that cannot be such a time
// (old Hermes wrote a string hash on Windows) says nothing: unknown.
func compareStart(recorded int64, l Live, now time.Time) (same, known bool) {
	if recorded < year2000 || recorded > now.Add(24*time.Hour).UnixMilli()/10 {
		return false, false
	}
	d := recorded - *l.StartTime
	return d >= -1 && d <= 1, true
}
