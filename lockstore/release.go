package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// owns reports whether rec names owner: same pid, and the same start time
// when both are known.
func owns(rec Record, owner procstate.Identity) bool {
	if rec.PID != owner.PID {
		return false
	}
	return rec.StartTime == nil || owner.StartTime == nil || *rec.StartTime == *owner.StartTime
}

// ownedFiles lists the pid file and scoped locks whose records name owner.
func (s *Store) ownedFiles(owner procstate.Identity) ([]Entry, error) {
	paths := []string{s.layout.PIDFile()}
	names, err := s.lockDirNames()
	for _, n := range names {
		if strings.HasSuffix(n, ".lock") {
			paths = append(paths, filepath.Join(s.layout.LockDir, n))
		}
	}
	var out []Entry
	for i, p := range paths {
		rec, rerr := ReadRecord(p)
		if rerr != nil || !owns(rec, owner) {
			continue
		}
		kind := KindScopedLock
		if i == 0 {
			kind = KindPIDFile
		}
		out = append(out, Entry{Path: p, Kind: kind, Record: &rec})
	}
	return out, err
}

// Release removes the pid file and scoped locks naming owner after owner
// has exited; it never touches other records.
func (s *Store) Release(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	es, err := s.ownedFiles(owner)
	errs := []error{err}
	for i := range es {
		e := &es[i]
		e.Verdict = procstate.Dead
		if rerr := os.Remove(e.Path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			e.Action, e.Err = ActionError, &FileError{Path: e.Path, Op: "release", Err: rerr, Hint: hintFor(rerr)}
			e.Error = e.Err.Error()
			errs = append(errs, e.Err)
		} else {
			e.Action, e.Reason = ActionSwept, "released: its gateway exited"
		}
		s.logEntry(*e)
	}
	return es, errors.Join(errs...)
}

// Owned lists the pid file and scoped locks whose records name owner.
func (s *Store) Owned(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	es, err := s.ownedFiles(owner)
	for i := range es {
		es[i].Verdict, es[i].Action, es[i].Reason = procstate.Alive, ActionKeep, "held by the supervised gateway"
	}
	return es, err
}
