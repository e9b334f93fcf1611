package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// released are gateways that have just exited, not yet reaped: a pid
// file or scoped lock whose record names one of them (owns) is theirs to
// give up, whatever Hermes' rules would make of a zombie's pid, and is
// removed as Release removes it (moveJudged).
type released []procstate.Identity

// releasedReason is a released file's reason, in its log line.
const releasedReason = "released: its gateway exited"

// release marks e, a file read for judging, released when its record
// names one of rel.
func (rel released) release(e *judged) bool {
	if len(rel) == 0 || e.Action == ActionError {
		return false
	}
	rec, err := ParseRecord(e.facts.data)
	if err != nil || !slices.ContainsFunc(rel, func(id procstate.Identity) bool { return owns(rec, id) }) {
		return false
	}
	e.released = true
	e.Record, e.Verdict, e.Action, e.Reason = &rec, procstate.Dead, ActionSweep, releasedReason
	return true
}

// readReleasable reads path with read, which reads at most
// MaxRecordSize+1 bytes (a larger file is no record), and marks it
// released; ok is false for a file that is no record of rel's.
func (rel released) readReleasable(path string, kind Kind, read func(path string) ([]byte, safefs.FileStamp, error)) (_ judged, ok bool) {
	b, st, err := read(path)
	if err != nil {
		return judged{}, false
	}
	j := judged{Entry: Entry{Path: path, Kind: kind}, facts: fileFacts{data: b}, stamp: st}
	return j, rel.release(&j)
}

// unlinkJudged unlinks name in root, e's file, a leftover (a temp or a
// .stale tombstone), only if it is still the file judged and no process
// holds it; op names the step in an error. The name can still change
// hands between the check and the unlink, so this is only for names no
// gateway claims: a temp's name is random, and a .stale is a tombstone its
// maker unlinks itself. A record is moved aside and proven first
// (moveJudged).
func (s *Store) unlinkJudged(root *os.Root, name string, e *judged, op string) {
	if !s.stillJudged(root, name, e) {
		return
	}
	if err := safefs.RemoveIn(root, name); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.fail(e, op, err)
		return
	}
	e.Action = ActionSwept
}

// ownedFiles lists the pid file and scoped locks whose records name
// owner, each marked released, with the stamp of the version read.
// The lock dir is listed a batch at a time, through ld when it is open
// (nil: by its path), and only the matches are kept: at 100 000 lock
// files it holds a batch of names, not all of them.
func (s *Store) ownedFiles(ld *safefs.Dir, owner procstate.Identity, read func(path string) ([]byte, safefs.FileStamp, error)) ([]judged, error) {
	var out []judged
	try := func(p string, kind Kind) {
		if j, ok := (released{owner}).readReleasable(p, kind, read); ok {
			out = append(out, j)
		}
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
// only once it is moved aside and proven to be the very file it read (as
// a sweep removes a stale one: moveJudged). A restart releases in the
// sweep before the start instead (SweepBeforeStart).
func (s *Store) Release(ctx context.Context, owner procstate.Identity) ([]Entry, error) {
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
	bin := newSweepBin(dirs.bin, s.log)
	defer bin.close()
	es := make([]Entry, len(js))
	for i := range js {
		e := &js[i]
		s.moveJudged(ctx, dirs, dirs.ld, bin, e)
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
