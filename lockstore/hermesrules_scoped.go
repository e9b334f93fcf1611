package lockstore

// _scoped_lock_record_is_stale and acquire_scoped_lock of status.py (see
// hermesrules.go for the map): the token-scoped locks in the lock dir.

import (
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// scopedRecord mirrors _scoped_lock_record_is_stale: stale when the pid is
// missing or dead, the start times conflict, the process is stopped
// (_process_is_stopped), a readable command line is not a gateway `run`,
// or, with the command line unreadable and a start time unknown, the
// record is not a gateway's. Where _process_is_stopped raises, Hermes
// decides nothing on a record that none of the checks before it found
// stale, and never removes the file: kept.
func (r *rules) scopedRecord(h hermesRecord) ruling {
	l, settled := r.live(h)
	if settled != nil {
		return *settled
	}
	stopped, raises := processIsStopped(l)
	if stopped {
		return stale(procstate.Stopped, "process is stopped")
	}
	rl := r.scopedOwner(h, l)
	if raises && rl.keep && l.Stopped {
		return keep(procstate.Unknown, "process is stopped, but its name is not UTF-8, on which Hermes' own stopped check raises; kept ("+rl.reason+")")
	}
	return rl
}

// processIsStopped mirrors _process_is_stopped: state T or t in
// /proc/<pid>/status, read as UTF-8 text. raises: that read raises
// UnicodeDecodeError (a process name that is not UTF-8), which Hermes
// does not catch. Off Linux there is no such file: never stopped.
func processIsStopped(l procstate.Live) (stopped, raises bool) {
	switch {
	case !hermesSeesStopped:
		return false, false
	case l.NameNotUTF8:
		return false, true
	}
	return l.Stopped, false
}

// scopedOwner is the rest of _scoped_lock_record_is_stale, on a live
// owner whose start time does not conflict: its command line decides.
func (r *rules) scopedOwner(h hermesRecord, l procstate.Live) ruling {
	switch {
	case r.wroteItself(h, l):
		// Stricter than Hermes: e.g. `python3 gw.py gateway run`, which
		// Hermes calls no gateway, keeps the lock it wrote.
		return keep(procstate.Alive, "same process (start time and command line match)")
	case l.Argv != nil && r.gateway(l.Argv, false):
		return keep(procstate.Alive, "a live gateway")
	case l.Argv != nil:
		return stale(procstate.Reused, "pid now runs "+quoteArgv(l.Argv)+", not a gateway run")
	case (h.StartTime == nil || l.StartTime == nil) && !h.recordLooksLikeGateway():
		return stale(procstate.Reused, "command line unreadable, start time unknown, and the record is not a gateway's")
	}
	return keep(procstate.Alive, "command line unreadable; start time matches")
}

// scopedLockFile applies acquire_scoped_lock to a scoped lock someone
// else holds: a record it cannot read, or one naming no pid, goes (see
// unreadable); the rest goes when scopedRecord finds it stale.
func (r *rules) scopedLockFile(f fileFacts) decision {
	if err := usable(f); err != nil {
		return r.unreadable(f, err)
	}
	return decide(f.rec, r.scopedRecord(f.rec))
}
