package lockstore

// get_running_pid, the last of status.py's rules (see hermesrules.go for
// the map), and the rule every file meets last: a held file is kept.

import (
	"fmt"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// keptForState is gateway.pid kept because get_running_pid's fallback,
// get_runtime_status_running_pid, found the gateway gateway_state.json
// names: Hermes then returns that pid and cleans nothing up.
func keptForState(f fileFacts, why string) decision {
	d := decision{verdict: procstate.Unknown, action: ActionKeep,
		reason: why + "; gateway_state.json names a live gateway of this home, so Hermes leaves this file"}
	if f.err == nil {
		d.record = &f.rec.Record
	}
	return d
}

// pidFile applies get_running_pid to gateway.pid, given what
// is_gateway_runtime_lock_active found, gateway.lock's own record (nil
// when it is absent or unreadable) and whether gateway_state.json names a
// running gateway (runtimeStatus's held). gateway.lock decides: held, the
// file stands while its record, or gateway.lock's, names a live gateway
// of this home (or of another profile: keptElsewhere); free, the file
// stands only while gateway_state.json names one (that fallback runs
// before the cleanup), else it is stale.
func (r *rules) pidFile(f fileFacts, lock lockState, lockRec *fileFacts, stateRuns bool) decision {
	err := usable(f)
	switch lock {
	case lockFree:
		if err != nil {
			if stateRuns {
				return keptForState(f, oneLine(err.Error())+"; gateway.lock is not held")
			}
			return decision{verdict: procstate.Unknown, action: ActionSweep, reason: oneLine(err.Error()) + "; gateway.lock is not held"}
		}
		if stateRuns {
			return keptForState(f, "gateway.lock is not held")
		}
		rl := r.runtimeRecord(f.rec)
		if rl.keep {
			rl.verdict, rl.reason = procstate.Reused, fmt.Sprintf("pid %d lives (%s) but gateway.lock is not held: no gateway runs in this home", f.rec.PID, rl.reason)
		} else {
			rl.reason += "; gateway.lock is not held"
		}
		rl.keep = false
		return decide(f.rec, rl)
	case lockHeld:
		if readRaises(f.err) || (lockRec != nil && readRaises(lockRec.err)) {
			// get_running_pid reads both records before it judges either:
			// its reader raising on one, it removes nothing.
			return decision{verdict: procstate.Unknown, action: ActionKeep,
				reason: "gateway.pid or gateway.lock is a record Hermes' reader raises on, so Hermes removes nothing; kept"}
		}
		var elsewhere *ruling
		if err == nil {
			rl := r.runtimeRecord(f.rec)
			if rl.keep {
				return decide(f.rec, rl)
			}
			if rl.elsewhere {
				elsewhere = &rl
			}
		}
		if lockRec != nil && lockRec.err == nil {
			rl := r.runtimeRecord(lockRec.rec)
			if rl.keep {
				d := decision{verdict: procstate.Alive, action: ActionKeep,
					reason: fmt.Sprintf("gateway.lock is held by live gateway pid %d; Hermes leaves this file while it runs", lockRec.rec.PID)}
				if err == nil {
					d.record = &f.rec.Record
				}
				return d
			}
			if rl.elsewhere && elsewhere == nil {
				elsewhere = &rl
			}
		}
		if elsewhere != nil {
			// get_running_pid() returns that pid and cleans nothing up.
			d := keptElsewhere(f.rec, *elsewhere)
			if err != nil {
				d.record = nil
			}
			return d
		}
		// Hermes cleans up here whatever gateway_state.json says.
	case lockUnknown:
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: "gateway.lock cannot be probed"}
	}
	if err != nil {
		if lock == lockNone && stateRuns {
			return keptForState(f, oneLine(err.Error()))
		}
		return r.unreadable(f, err)
	}
	d := decide(f.rec, r.runtimeRecord(f.rec))
	switch {
	case lock == lockNone && d.action == ActionKeep:
		// Stricter than Hermes, which reads a missing gateway.lock as
		// "no gateway runs": the files may be a Hermes older than the
		// runtime lock, and the pid file stands while its record names
		// a live gateway of this home.
		d.reason += "; no gateway.lock file (an older Hermes): kept, stricter than Hermes"
	case lock == lockNone && stateRuns:
		return keptForState(f, d.reason+"; no gateway.lock file")
	}
	return d
}

// keepHeld is the last rule on any file: one that some process holds
// locked (flock on POSIX, the byte at 1 MiB on Windows) is never renamed
// or deleted, whatever its content says: its holder uses it as a lock.
func keepHeld(f fileFacts, d decision) decision {
	if f.heldErr != nil && removes(d.action) {
		d.verdict, d.action = procstate.Unknown, ActionKeep
		d.reason = oneLine(f.heldErr.Error()) + "; kept (" + d.reason + ")"
	}
	if f.held && removes(d.action) {
		d.verdict, d.action = procstate.Alive, ActionKeep
		d.reason = "locked by a live process, which uses it as a lock: never moved (" + d.reason + ")"
	}
	return d
}

// removes reports whether a sweep taking action renames or deletes the
// file (or replaces it, as marking stopped does).
func removes(a Action) bool {
	return a == ActionSweep || a == ActionQuarantine || a == ActionMarkStopped
}

// runningFrom says which file names the gateway that runs in a home.
type runningFrom int

const (
	runningNone runningFrom = iota
	runningPIDFile
	runningLock
	runningState
)

// getRunningPID is get_running_pid's answer, without its cleanup (with
// our stricter rules for homes without gateway.lock, and for a held
// gateway.lock, which counts as a running gateway whatever the records
// say): gateway.pid when its decision (nil when it is absent or
// unreadable) keeps it for a live gateway, else gateway.lock while it is
// held, else gateway_state.json when it names a running gateway.
func getRunningPID(lock lockState, pid *decision, stateRuns bool) runningFrom {
	switch {
	case pid != nil && pid.action == ActionKeep && pid.verdict == procstate.Alive:
		return runningPIDFile
	case lock == lockHeld:
		return runningLock
	case stateRuns:
		return runningState
	}
	return runningNone
}
