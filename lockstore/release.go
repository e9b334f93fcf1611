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
// The lock dir is listed a batch at a time, through ld when it is open
// (nil: by its path), and only the matches are kept: at 100 000 lock
// files it holds a batch of names, not all of them.
func (s *Store) ownedFiles(ld *safefs.Dir, owner procstate.Identity, read func(path string) ([]byte, safefs.FileStamp, error)) ([]judged, error) {
	var out []judged
	try := func(p string, kind Kind) {
		b, st, err := read(p)
		if err != nil {
			return
		}
		rec, err := ParseRecord(b)
		if err != nil || !owns(rec, owner) {
			return
		}
		out = append(out, judged{Entry: Entry{Path: p, Kind: kind, Record: &rec}, stamp: st})
	}
	try(s.layout.PIDFile(), KindPIDFile)
	err := s.eachLockDirBatch(ld, ownedBatch, func(names []string) {
		for _, n := range names {
			if strings.HasSuffix(n, ".lock") {
				try(filepath.Join(s.layout.LockDir, n), KindScopedLock)
			}
		}
	})
	return out, err
}

// ownedBatch is how many lock-dir names ownedFiles lists at a time.
const ownedBatch = 1024

// Release removes the pid file and scoped locks naming owner after owner
// has exited; it never touches other records. Like a sweep it reads and
// removes through the home and lock dir opened once, and removes a file
// only if it is still the one it read.
func (s *Store) Release(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	dirs, derr := s.openDirs()
	defer dirs.close()
	js, err := s.ownedFiles(dirs.ld, owner, func(p string) ([]byte, safefs.FileStamp, error) {
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
	js, err := s.ownedFiles(nil, owner, func(p string) ([]byte, safefs.FileStamp, error) {
		return safefs.ReadRegular(p, MaxRecordSize+1)
	})
	es := make([]Entry, len(js))
	for i := range js {
		es[i] = js[i].Entry
		es[i].Verdict, es[i].Action, es[i].Reason = procstate.Alive, ActionKeep, "held by the supervised gateway"
	}
	return es, err
}
