package lockstore

import (
	"context"
	"errors"
	"os"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// RuntimeLockHeld reports whether some process holds gateway.lock.
func (s *Store) RuntimeLockHeld() (bool, error) {
	f, err := safefs.OpenLockFile(s.layout.RuntimeLock(), false)
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
		state.Record, state.Verdict, state.Action = &st.rec.Record, procstate.Alive, ActionKeep
		state.Reason = "gateway.lock is not held, but this file names a live gateway of this home (Hermes' get_runtime_status_running_pid)"
		return state.Entry, true
	}
	return Entry{}, false
}
