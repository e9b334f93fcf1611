package procstate

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Live is one look at a running process, holding what Hermes' own checks
// read: whether it is a zombie or stopped, its start time and its command
// line.
type Live struct {
	PID     int
	Zombie  bool
	Stopped bool
	// StartTime is in Hermes units (see Identity); nil when unknown.
	StartTime *int64
	// NaiveStartTime is what Hermes itself records on Linux, where it
	// splits /proc/<pid>/stat on whitespace: when comm holds spaces or ')'
	// that lands on another field. Nil when it equals StartTime or cannot
	// be had.
	NaiveStartTime *int64
	// EpochStartTime is what Hermes records on Linux where its own read
	// of /proc/<pid>/stat raises (a name that is not UTF-8): psutil's
	// create time, int(round((ticks/CLK_TCK + btime)*100)) centiseconds
	// since the epoch, with today's btime. Nil where that read succeeds.
	EpochStartTime *int64
	// NameNotUTF8 reports a process name (comm) that is not UTF-8, on
	// which Hermes' read of /proc/<pid>/status (_process_is_stopped)
	// raises UnicodeDecodeError. Always false off Linux.
	NameNotUTF8 bool
	// Argv is the live command line; nil when it cannot be read.
	Argv []string
	// UID is the effective uid where the process table gives it (darwin),
	// for OwnerConflict; nil elsewhere.
	UID *uint32
}

// Look inspects pid once, its command line included. It wraps
// ErrNoProcess when no process has the pid and ErrPermission when it may
// not be inspected.
func (p *Prober) Look(ctx context.Context, pid int) (Live, error) {
	l, err := p.Glance(ctx, pid)
	if err == nil {
		l.Argv = p.Argv(ctx, pid)
	}
	return l, err
}

// Glance is Look without the command line, which is a second read of the
// process: a caller whose start time already settles the question skips
// it. Its errors are Look's.
func (p *Prober) Glance(ctx context.Context, pid int) (Live, error) {
	l := Live{PID: pid}
	if pid == 0 && pidZeroExists {
		// psutil finds pid 0 (kernel_task, the System Idle Process) alive
		// where it exists, so Hermes judges it as a live process.
		return l, fmt.Errorf("pid 0 is the kernel's: %w", ErrPermission)
	}
	if pid <= 0 || pid > math.MaxInt32 {
		return l, NoProcess(pid)
	}
	st, err := readLive(ctx, pid)
	if err != nil {
		return l, err
	}
	l.Zombie, l.Stopped, l.StartTime, l.NaiveStartTime, l.UID = st.zombie, st.stopped, st.start, st.naiveStart, st.uid
	l.NameNotUTF8 = st.nameNotUTF8
	if st.hermesFails {
		// Only then does Hermes record psutil's epoch-based time.
		l.EpochStartTime = st.epochStart
	}
	return l, nil
}

// Argv is the command line of pid, or nil when it cannot be read. Read
// after Glance, it is another process's only if the glanced one exited
// and its pid was reused in between, as with Look's two reads: a record
// then judged stale on it names a process that is gone.
func (p *Prober) Argv(ctx context.Context, pid int) []string {
	if argv, err := cmdline(ctx, pid); err == nil && len(argv) > 0 {
		return argv
	}
	return nil
}

// HermesStartTime is the start time Hermes itself records for l: its
// whitespace-split reading on Linux, or the epoch time where that raises,
// else StartTime.
func (l Live) HermesStartTime() *int64 {
	switch {
	case l.EpochStartTime != nil:
		return l.EpochStartTime
	case l.NaiveStartTime != nil:
		return l.NaiveStartTime
	}
	return l.StartTime
}

// StartTimesConflict reports whether a recorded start time proves that l
// is not the process that recorded it, by Hermes' rule: both are known and
// differ. What "known" and "differ" mean follows the platform (see
// compareStart): Hermes' own arithmetic on Linux, its rounding of the
// create time elsewhere.
func StartTimesConflict(recorded *int64, l Live, now time.Time) bool {
	if recorded == nil || l.StartTime == nil {
		return false
	}
	same, known := compareStart(*recorded, l, now)
	return known && !same
}

// StartTimesEqual reports whether both start times are known and name the
// same start: the proof the stricter-than-Hermes rule needs.
func StartTimesEqual(recorded *int64, l Live, now time.Time) bool {
	if recorded == nil || l.StartTime == nil {
		return false
	}
	same, known := compareStart(*recorded, l, now)
	return known && same
}

// Exists reports whether a process has pid, whether or not this user may
// inspect it: on a /proc mounted with hidepid, another user's processes
// are missing from its listing and their files from their reads, which
// proves nothing of them.
func (p *Prober) Exists(pid int) bool { return exists(pid) }

// exists is Exists. Pid 0 exists where Look says so (pidZeroExists).
// Any other pid outside 1..MaxInt32 names no process, and never reaches
// kill(2), which would read 0, -1 or a truncated pid as our group, every
// process or another pid.
func exists(pid int) bool {
	switch {
	case pid == 0:
		return pidZeroExists
	case pid < 0 || pid > math.MaxInt32:
		return false
	}
	return processExists(pid)
}
