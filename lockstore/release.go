package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
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

// ownedFiles lists the pid file and scoped locks whose records name
// owner, each with the stamp of the version read.
func (s *Store) ownedFiles(owner procstate.Identity, read func(path string) ([]byte, safefs.FileStamp, error)) ([]judged, error) {
	paths := []string{s.layout.PIDFile()}
	names, err := s.lockDirNames()
	for _, n := range names {
		if strings.HasSuffix(n, ".lock") {
			paths = append(paths, filepath.Join(s.layout.LockDir, n))
		}
	}
	var out []judged
	for i, p := range paths {
		b, st, rerr := read(p)
		if rerr != nil {
			continue
		}
		rec, perr := ParseRecord(b)
		if perr != nil || !owns(rec, owner) {
			continue
		}
		kind := KindScopedLock
		if i == 0 {
			kind = KindPIDFile
		}
		out = append(out, judged{Entry: Entry{Path: p, Kind: kind, Record: &rec}, stamp: st})
	}
	return out, err
}

// Release removes the pid file and scoped locks naming owner after owner
// has exited; it never touches other records. Like a sweep it reads and
// removes through the home and lock dir opened once, and removes a file
// only if it is still the one it read.
func (s *Store) Release(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	dirs, derr := s.openDirs()
	defer dirs.close()
	js, err := s.ownedFiles(owner, func(p string) ([]byte, safefs.FileStamp, error) {
		root, name, err := dirs.of(s.layout, p)
		if err != nil {
			return nil, safefs.FileStamp{}, err
		}
		return safefs.ReadRoot(root, name, MaxRecordSize+1)
	})
	errs := []error{err, derr}
	es := make([]Entry, len(js))
	for i := range js {
		e := &js[i]
		e.Verdict = procstate.Dead
		e.Action, e.Reason = ActionSwept, "released: its gateway exited"
		// of cannot fail: the file was read through the same directory.
		root, name, _ := dirs.of(s.layout, e.Path)
		if s.stillJudged(root, name, e) {
			// A swap inside the directory between this check and the
			// unlink is still possible; it can only unlink a name there.
			if rerr := safefs.RemoveIn(root, name); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				s.fail(e, "release", rerr)
			}
		}
		if e.Err != nil {
			e.Error = e.Err.Error()
			errs = append(errs, e.Err)
		}
		es[i] = e.Entry
		s.logEntry(e.Entry)
	}
	return es, errors.Join(errs...)
}

// Owned lists the pid file and scoped locks whose records name owner.
func (s *Store) Owned(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	js, err := s.ownedFiles(owner, func(p string) ([]byte, safefs.FileStamp, error) {
		return safefs.ReadRegular(p, MaxRecordSize+1)
	})
	es := make([]Entry, len(js))
	for i := range js {
		es[i] = js[i].Entry
		es[i].Verdict, es[i].Action, es[i].Reason = procstate.Alive, ActionKeep, "held by the supervised gateway"
	}
	return es, err
}
