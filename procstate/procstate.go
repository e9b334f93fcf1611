// Package procstate judges whether a pid read from a file still names the
// process that wrote it, using start time and command line, never a bare
// "does this pid exist".
package procstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Verdict is what a liveness check concluded about a recorded process.
type Verdict uint8

const (
	// Unknown means the process could not be inspected (permission denied);
	// callers must treat it as alive and never delete its files.
	Unknown Verdict = iota
	// Alive means the pid runs the very process the record names.
	Alive
	// Dead means no process has the pid.
	Dead
	// Zombie means the process exited and waits to be reaped; it counts as dead.
	Zombie
	// Stopped means the process is stopped (state T/t); Hermes counts it as stale.
	Stopped
	// Reused means the pid is alive but belongs to another process.
	Reused
)

var verdictNames = [...]string{"unknown", "alive", "dead", "zombie", "stopped", "reused"}

// String returns the verdict's lower-case name.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// MarshalText encodes the verdict as its name so JSON output stays readable.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict name written by MarshalText.
func (v *Verdict) UnmarshalText(b []byte) error {
	for i, n := range verdictNames {
		if n == string(b) {
			*v = Verdict(i)
			return nil
		}
	}
	return fmt.Errorf("procstate: unknown verdict %q", b)
}

// Stale reports whether files owned by a process with this verdict may be
// removed: the owner is dead, a zombie, stopped, or someone else now.
func (v Verdict) Stale() bool {
	return v == Dead || v == Zombie || v == Stopped || v == Reused
}

// Gone reports whether the process is no more: dead, a zombie, or someone
// else now. A stopped process is not gone: Stale's rule (Hermes', for the
// files of a stopped owner) is not one of liveness, and a process stopped
// by Ctrl-Z or SIGSTOP runs on after SIGCONT.
func (v Verdict) Gone() bool {
	return v == Dead || v == Zombie || v == Reused
}

// Identity names one process across time: a pid alone is not enough, because
// the kernel hands it out again.
type Identity struct {
	PID int
	// StartTime is in Hermes' units (see StartTime); nil when unknown.
	StartTime *int64
	Argv      []string
	// WriterUID is the uid that owns the record file the identity was read
	// from (see OwnerConflict); nil when unknown or not from a file.
	WriterUID *uint32
}

// String formats the identity for log lines.
func (id Identity) String() string {
	if id.StartTime == nil {
		return fmt.Sprintf("pid %d (start time unknown)", id.PID)
	}
	return fmt.Sprintf("pid %d (start time %d)", id.PID, *id.StartTime)
}

// Same reports whether two identities name the same process by pid and
// exactly equal known start times.
func (id Identity) Same(other Identity) bool {
	return id.PID == other.PID && id.StartTime != nil && other.StartTime != nil &&
		*id.StartTime == *other.StartTime
}

// Observation is the result of judging a recorded identity against the live
// process table.
type Observation struct {
	Verdict Verdict
	// Reason says in a few words why, for logs and the sweep table.
	Reason string
	// Live is what the pid runs now, as far as it could be read.
	Live Identity
}

// Options tunes a Prober.
type Options struct {
	// StartTolerance is how far apart (in Hermes units) two start times may
	// be and still name one process, provided the command lines agree. It
	// absorbs create-time drift on platforms where the time is derived
	// rather than read (gopsutil issues #1792/#1802). Negative selects the
	// platform default.
	StartTolerance int64
}

// Prober inspects live processes: through /proc on Linux, elsewhere
// through gopsutil and the OS's own process records.
type Prober struct {
	tolerance int64
}

// NewProber returns a Prober configured by opt.
func NewProber(opt Options) *Prober {
	tol := opt.StartTolerance
	if tol < 0 {
		tol = defaultStartTolerance
	}
	return &Prober{tolerance: tol}
}

// DefaultStartTolerance is the platform's start-time window in Hermes units.
func DefaultStartTolerance() int64 { return defaultStartTolerance }

// ErrPermission reports that the process exists but may not be inspected.
var ErrPermission = errors.New("permission denied inspecting process")

// ErrNoProcess reports that no process has the pid.
var ErrNoProcess = errors.New("no such process")

// NoProcess returns ErrNoProcess for pid, as "pid N: no such process". It
// is made without fmt: a sweep of a lock dir of stale files makes one for
// every dead pid the files name.
func NoProcess(pid int) error { return noProcess(pid) }

type noProcess int

func (e noProcess) Error() string { return "pid " + strconv.Itoa(int(e)) + ": " + ErrNoProcess.Error() }
func (noProcess) Unwrap() error   { return ErrNoProcess }

// liveState is one read of a process: what every verdict is built from.
type liveState struct {
	start *int64 // Hermes units
	// naiveStart is Hermes' whitespace-split reading on Linux, when it
	// differs from start.
	naiveStart *int64
	// hermesFails: Hermes' own reading of the start time raises (Linux),
	// so it records epochStart, psutil's create time, instead.
	hermesFails bool
	epochStart  *int64
	// nameNotUTF8: the process name is not UTF-8, so Hermes' text reads
	// of /proc/<pid>/stat and /proc/<pid>/status raise (Linux).
	nameNotUTF8 bool
	zombie      bool
	stopped     bool
	// uid is the effective uid, where the process table gives it cheaply
	// (darwin's kinfo_proc); nil elsewhere.
	uid *uint32
}

// Inspect returns the live identity of pid: its start time in Hermes units
// and its command line. It wraps ErrNoProcess or ErrPermission.
func (p *Prober) Inspect(ctx context.Context, pid int) (Identity, error) {
	if pid <= 0 {
		return Identity{PID: pid}, NoProcess(pid)
	}
	st, err := readLive(ctx, pid)
	if err != nil {
		return Identity{PID: pid}, err
	}
	id := Identity{PID: pid, StartTime: st.start}
	id.Argv, _ = cmdline(ctx, pid)
	return id, nil
}

// Self returns the current process's identity.
func (p *Prober) Self(ctx context.Context) (Identity, error) {
	return p.Inspect(ctx, os.Getpid())
}

// Judge decides whether the recorded identity rec is still alive. When both
// start times are known and the command lines can be compared, they decide:
// equal start times with matching command lines (see ArgvMatches) are the
// same process, whatever isGateway says, and with differing ones are not.
// Otherwise isGateway classifies the command line, and a live pid whose
// readable command line is not a gateway is Reused, as in Hermes'
// _scoped_lock_record_is_stale.
func (p *Prober) Judge(ctx context.Context, rec Identity, isGateway func([]string) bool) Observation {
	return p.judge(ctx, rec, isGateway, true)
}

// Liveness judges rec as Judge does, except that a stopped process is
// judged by its identity like any other: Stopped only when it is the
// recorded process, else Reused. Judge calls any stopped process Stopped
// at once, since its files are stale whoever it is; whether a process
// still runs needs to know that it is the one recorded.
func (p *Prober) Liveness(ctx context.Context, rec Identity, isGateway func([]string) bool) Observation {
	return p.judge(ctx, rec, isGateway, false)
}

func (p *Prober) judge(ctx context.Context, rec Identity, isGateway func([]string) bool, stoppedIsStale bool) Observation {
	obs := Observation{Live: Identity{PID: rec.PID}}
	if rec.PID <= 0 {
		obs.Verdict, obs.Reason = Dead, fmt.Sprintf("pid %d is not a process id", rec.PID)
		return obs
	}
	st, err := readLive(ctx, rec.PID)
	switch {
	case errors.Is(err, ErrNoProcess):
		obs.Verdict, obs.Reason = Dead, "no such process"
		return obs
	case err != nil:
		obs.Verdict, obs.Reason = Unknown, err.Error()
		return obs
	}
	if rec.StartTime != nil && ((st.naiveStart != nil && *rec.StartTime == *st.naiveStart) ||
		(st.epochStart != nil && *rec.StartTime == *st.epochStart)) {
		// Hermes recorded its whitespace-split reading of the same field,
		// or psutil's create time where that reading raises.
		st.start = rec.StartTime
	}
	obs.Live.StartTime = st.start
	switch {
	case st.zombie:
		obs.Verdict, obs.Reason = Zombie, "process is a zombie"
		return obs
	case st.stopped && stoppedIsStale:
		obs.Verdict, obs.Reason = Stopped, "process is stopped"
		return obs
	case OwnerConflict(rec.WriterUID, st.uid):
		// Decisive where the command line of another user's process
		// cannot be read and the record has no start time (darwin).
		obs.Verdict = Reused
		obs.Reason = fmt.Sprintf("pid now runs as uid %d, the record was written by uid %d", *st.uid, *rec.WriterUID)
		return obs
	}
	var d int64
	if rec.StartTime != nil && st.start != nil {
		d = *rec.StartTime - *st.start
		if d < 0 {
			d = -d
		}
		// Settled without reading the command line: in a sweep of stale
		// files this is the common case, and each /proc read counts.
		if d > p.tolerance {
			obs.Verdict = Reused
			obs.Reason = fmt.Sprintf("start time %d differs from recorded %d", *st.start, *rec.StartTime)
			return obs
		}
	}
	argv, argvErr := cmdline(ctx, rec.PID)
	obs.Live.Argv = argv
	readable := argvErr == nil && len(argv) > 0
	if rec.StartTime != nil && st.start != nil && readable && len(rec.Argv) > 0 {
		// A start time is a 10 ms tick on Linux: a pid reused within the
		// same tick has the same one. Only the command line tells the two
		// apart, and when it matches, the process wrote the record itself,
		// so its files are its own whatever its command line looks like.
		if !ArgvMatches(rec.Argv, argv) {
			obs.Verdict = Reused
			obs.Reason = fmt.Sprintf("start time %d matches recorded %d but pid now runs %s", *st.start, *rec.StartTime, quoteArgv(argv))
			return obs
		}
		obs.Verdict, obs.Reason = alive(st.stopped, "same process (start time and command line match)")
		return obs
	}
	if rec.StartTime != nil && st.start != nil && d != 0 {
		// Inside the window but not equal, and no command line to compare:
		// a drifted clock cannot be told from a reused pid.
		obs.Verdict = Reused
		obs.Reason = fmt.Sprintf("start time %d near recorded %d and no command line to compare", *st.start, *rec.StartTime)
		return obs
	}
	if readable && isGateway != nil && !isGateway(argv) {
		obs.Verdict = Reused
		obs.Reason = "pid now runs " + quoteArgv(argv)
		return obs
	}
	if !readable && (rec.StartTime == nil || st.start == nil) && isGateway != nil && !isGateway(rec.Argv) {
		obs.Verdict = Reused
		obs.Reason = "command line unreadable and record is not a gateway"
		return obs
	}
	obs.Verdict, obs.Reason = alive(st.stopped, "same process")
	return obs
}

// alive is the verdict on the recorded process, found running or stopped.
func alive(stopped bool, why string) (Verdict, string) {
	if stopped {
		return Stopped, why + ", stopped"
	}
	return Alive, why
}

// WaitGone waits until rec no longer names a live process (see Gone: a
// stopped one still does), checking every interval: it is for processes
// we did not start and so cannot wait on.
func (p *Prober) WaitGone(ctx context.Context, rec Identity, isGateway func([]string) bool, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if v := p.Liveness(ctx, rec, isGateway).Verdict; v.Gone() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to exit: %w", rec, ctx.Err())
		case <-t.C:
		}
	}
}

// Environ returns the environment pid was started with. Only its owner (or
// an administrator) may read it; it wraps ErrNoProcess or ErrPermission.
func (p *Prober) Environ(ctx context.Context, pid int) ([]string, error) {
	return environ(ctx, pid)
}

// Pids lists the pids of every process on the system.
func (p *Prober) Pids(ctx context.Context) ([]int, error) {
	ps, err := pids(ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	return ps, nil
}

func quoteArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
