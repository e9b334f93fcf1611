package lockstore

import (
	"context"
	"errors"
	"os"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// RuntimeLockHeld reports whether some process holds gateway.lock.
func (s *Store) RuntimeLockHeld() (bool, error) { return fileLocked(s.layout.RuntimeLock()) }

// fileLocked reports whether some process holds path locked, opening it
// as gateway.lock is opened (safefs.OpenLockFile: never a symlink, FIFO or
// device), trying the lock and letting go of it; an absent file is not
// held.
func fileLocked(path string) (bool, error) {
	f, err := safefs.OpenLockFile(path, false)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := safefs.LockFile(f); err != nil {
		if errors.Is(err, safefs.ErrLocked) {
			return true, nil
		}
		return false, err
	}
	return false, safefs.UnlockFile(f)
}

// Running reports the gateway that runs in the home, as Hermes'
// get_running_pid decides it (with our stricter rules for homes without
// gateway.lock and for a held one): the gateway.pid entry when it stands
// for a live gateway, gateway.lock's when the lock is held, or
// gateway_state.json's when only it names a live gateway of this home.
// It changes nothing.
func (s *Store) Running(ctx context.Context) (Entry, bool) {
	h := s.readHome()
	state, found := s.readRecord(s.layout.StateFile(), KindState, false, false)
	st := readable(state, found)
	s.judgeHome(s.rules(ctx), &h, st)
	return running(&h, state, st)
}

// running is get_running_pid's answer on a home judged by judgeHome (see
// Running); state is gateway_state.json's entry and st its facts.
func running(h *homeFiles, state judged, st *fileFacts) (Entry, bool) {
	switch getRunningPID(h.lockState, h.pidDecision, h.stateRuns) {
	case runningPIDFile:
		return h.pid.Entry, true
	case runningLock:
		return h.lock.Entry, true
	case runningState:
		if why, raises := stateRaises(st); raises {
			// No pid of its says anything: Hermes' own check raises here,
			// so nothing may start beside what it would count as running.
			state.Record, state.Verdict, state.Action = nil, procstate.Unknown, ActionKeep
			state.Reason = "gateway.lock is not held, and Hermes' get_runtime_status_running_pid raises on gateway_state.json (" +
				why + "), so it counts a gateway as running in this home: fix or remove " + state.Path
			return state.Entry, true
		}
		state.Record, state.Verdict, state.Action = &st.rec.Record, procstate.Alive, ActionKeep
		state.Reason = "gateway.lock is not held, but this file names a live gateway of this home (Hermes' get_runtime_status_running_pid)"
		return state.Entry, true
	}
	return Entry{}, false
}

// stateRaises says why Hermes' check of gateway_state.json (st, never nil
// where it says a gateway runs) raises, if it does: its reader raises on
// the file, or its gateway_state is a list or object.
func stateRaises(st *fileFacts) (why string, raises bool) {
	switch {
	case st.err != nil:
		return oneLine(st.err.Error()), true
	case st.rec.stateRaises:
		return `its "gateway_state" is a list or object, which Hermes' "in" test raises on`, true
	}
	return "", false
}
