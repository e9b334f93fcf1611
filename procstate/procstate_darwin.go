package procstate

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Hermes stores int(round(create_time*100)), which pythonCentiseconds
// repeats exactly from the same kinfo_proc; the window only absorbs a
// psutil that computes it otherwise.
const defaultStartTolerance = 1

// readLive reads state, uid and start time from one kinfo_proc, the
// structure gopsutil also reads for the create time: gopsutil's Status
// would fork /bin/ps on every judgement, and ignore its failure.
func readLive(_ context.Context, pid int) (liveState, error) {
	k, err := kinfo(pid)
	if err != nil {
		return liveState{}, err
	}
	tv := k.Proc.P_starttime
	return kinfoLive(k.Proc.P_stat, k.Eproc.Ucred.Uid, int64(tv.Sec), int64(tv.Usec)), nil
}

// otherUser: kern.procargs2 fails with EINVAL for another user's process
// (and for a zombie), where the kinfo_proc is still readable.
func otherUser(err error) bool { return errors.Is(err, unix.EINVAL) }

// pidZeroExists: pid 0 is a process here (kernel_task, the System Idle
// Process), which psutil reports alive.
const pidZeroExists = true

// kinfo reads pid's kinfo_proc.
func kinfo(pid int) (*unix.KinfoProc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case errors.Is(err, unix.EIO):
		// x/sys reports a reply of the wrong size so; for one pid the
		// kernel returns nothing when no process has it.
		if !exists(pid) {
			return nil, NoProcess(pid)
		}
		return nil, fmt.Errorf("pid %d: kinfo_proc: %w", pid, err)
	case errors.Is(err, unix.ESRCH):
		return nil, NoProcess(pid)
	case err != nil:
		return nil, classify(pid, err)
	case int(k.Proc.P_pid) != pid:
		return nil, fmt.Errorf("pid %d: kinfo_proc names pid %d", pid, k.Proc.P_pid)
	}
	return k, nil
}

// owner reads the real and effective uid from the kinfo_proc readLive
// reads.
func owner(_ context.Context, pid int) (Owner, error) {
	k, err := kinfo(pid)
	if err != nil {
		return Owner{}, err
	}
	return Owner{Real: int(k.Eproc.Pcred.P_ruid), Effective: int(k.Eproc.Ucred.Uid)}, nil
}
