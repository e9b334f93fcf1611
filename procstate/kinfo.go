package procstate

import "math"

// These are pure functions of what darwin's kinfo_proc holds, kept free of
// build tags so that their tables run on every OS the tests run on.

// darwin's p_stat values (sys/proc.h).
const (
	darwinSIDL  = 1
	darwinSRUN  = 2
	darwinSSLP  = 3
	darwinSSTOP = 4
	darwinSZOMB = 5
)

// pythonCentiseconds is Hermes' start time off Linux,
// int(round(psutil create_time*100)), for a create time of sec seconds and
// usec microseconds. psutil builds create_time in C as the double
// tv_sec + tv_usec/1000000.0, and Python's round() rounds that double's
// exact value half to even, so the arithmetic is repeated step by step in
// float64: the conversions keep the compiler from fusing the operations.
func pythonCentiseconds(sec, usec int64) int64 {
	t := float64(float64(sec) + float64(usec)/1000000.0)
	return int64(math.RoundToEven(float64(t * 100)))
}

// kinfoLive builds a liveState from the fields of a kinfo_proc: p_stat,
// the effective uid of e_ucred and p_starttime.
func kinfoLive(stat int8, uid uint32, sec, usec int64) liveState {
	start := pythonCentiseconds(sec, usec)
	return liveState{
		start:   &start,
		uid:     &uid,
		zombie:  stat == darwinSZOMB,
		stopped: stat == darwinSSTOP,
	}
}

// OwnerConflict reports whether a live process cannot be the writer of a
// record: both uids are known and differ. A process cannot change the
// owner of a file it creates, and Hermes creates its pid file and scoped
// locks afresh (O_EXCL) and replaces its state file, so the owner of such a
// file is the uid the writer ran as; a pid now run by another user was
// handed out again. writer is nil when the file's owner is unknown (Windows,
// or a file rewritten in place such as gateway.lock), live when the process
// table does not say.
// A writer of uid 99 proves nothing: macOS reports that owner (_unknown)
// for every file on a volume that ignores ownership.
func OwnerConflict(writer, live *uint32) bool {
	return writer != nil && live != nil && *writer != *live && *writer != macUnknownUID
}

// macUnknownUID is macOS's _unknown user.
const macUnknownUID = 99
