package lockstore

// A judged file moved aside, and the proof that it is the file judged:
// what every removal (a sweep's or a release's) and every quarantine
// passes through between its rename and its unlink or its new name
// (moveJudged; a leftover, judged by age, is unlinked as it lies).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// moveAside renames e's file aside with move, between the test hooks
// that race it. It reports false when nothing moved: the file was gone
// already (e says so) or the rename failed (e is the error).
func (s *Store) moveAside(e *judged, move func() error) bool {
	if s.beforeMove != nil {
		s.beforeMove(e.Path)
	}
	if err := move(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			e.Action, e.Reason = ActionOK, "already gone"
			return false
		}
		s.fail(e, "rename", err)
		return false
	}
	if s.afterMove != nil {
		s.afterMove(e.Path)
	}
	return true
}

// movedFile is a judged file just moved aside: how to look at it where it
// lies, where that is as an entry shows it, and how it goes back under a
// name (never replacing a file). Funcs, not an interface and a string, so
// that the names they close over stay on the stack and the place is made
// only for an entry that says it: a sweep moves every stale file.
type movedFile struct {
	stamp func() (safefs.FileStamp, error)
	read  func() ([]byte, safefs.FileStamp, error)
	where func() string
	back  func(dst string) error
}

// provenAside reports whether m, the file judged under name and just
// moved aside, is that very file, unchanged or changed only into what is
// still stale. Anything else goes back, and e says why. The rename keeps
// the inode: an unchanged stamp proves nobody replaced or rewrote the
// file since it was judged, without reading it; only a changed one is
// read and judged again (claimedSince).
func (s *Store) provenAside(ctx context.Context, e *judged, name string, m movedFile) bool {
	st, err := m.stamp()
	if err == nil && !st.SameFile(e.stamp) || errors.Is(err, safefs.ErrNotRegular) {
		s.putBack(e, name, m.where(), m.back)
		return false
	}
	if err != nil || !st.Same(e.stamp) {
		now, _, err := m.read()
		if s.claimedSince(ctx, now, err, e) {
			s.giveBack(e, name, m.where(), m.back)
			return false
		}
	}
	return true
}

// replacedSuffix names where a file that took a judged file's name is
// put when the name was taken once more: no sweep judges or removes it.
const replacedSuffix = ".replaced"

// keepAs gives a file back the name name with move, which never replaces
// a file (it fails with os.ErrExist), or else the first free one of
// name.replaced, name.replaced.1, ..., and returns the name it got.
func keepAs(name string, move func(string) error) (string, error) {
	if err := move(name); !errors.Is(err, os.ErrExist) {
		return name, err
	}
	return firstFree(name+replacedSuffix, move)
}

// moveBack gives a file aside since its move (as aside) its name back
// with move, which never replaces a file, or else the first free name
// keepAs finds beside it, which no sweep judges or removes, and returns
// the name it got. Where the file cannot be moved at all, the entry is an
// error that says why it was to go back (why) and where it lies, and ok
// is false: a later sweep takes it there for a leftover.
func (s *Store) moveBack(e *judged, name, aside, why string, move func(dst string) error) (kept string, ok bool) {
	kept, err := keepAs(name, move)
	if err != nil {
		s.fail(e, "put back", fmt.Errorf("%s, and it could not be moved back, so it is at %s: move it back by hand before a later sweep removes it as a leftover: %w", why, aside, err))
		return "", false
	}
	return kept, true
}

// putBack moves back a file that took the name of the one judged between
// its last check and its move aside: never judged, it is left for the
// next sweep, as a file replaced before the check is, and the entry says
// under which name.
func (s *Store) putBack(e *judged, name, aside string, move func(dst string) error) {
	kept, ok := s.moveBack(e, name, aside, "another file took its name just before it was moved aside", move)
	if !ok {
		return
	}
	e.Verdict, e.Action = procstate.Unknown, ActionKeep
	e.Reason = "replaced by another file just before it was moved aside: put back, left alone for the next sweep"
	if kept != name {
		e.Reason = "replaced by another file just before it was moved aside, and its name taken again since: kept as " + kept
	}
}

// giveBack moves back a file claimedSince gave back. A claim is never
// deleted for want of its name: it was a live gateway's.
func (s *Store) giveBack(e *judged, name, aside string, move func(dst string) error) {
	if kept, ok := s.moveBack(e, name, aside, "changed since it was judged and to be given back", move); ok && kept != name {
		e.Reason += "; its name was taken meanwhile, so it is kept as " + kept
	}
}

// claimedSince looks again at the bytes now of a file that changed
// between its judgement and its rename aside (err: they could not be
// read): whether it must get its name back, because a gateway has just
// claimed it, or because what it says now cannot be read as a record at
// all. Those bytes were never judged: a claim caught mid-write (truncated,
// half written), or beyond the MaxRecordSize read here (a long command
// line), is no proof of a stale file, and the next sweep judges it whole.
func (s *Store) claimedSince(ctx context.Context, now []byte, err error, e *judged) bool {
	if err == nil && bytes.Equal(now, e.facts.data) || errors.Is(err, os.ErrNotExist) {
		return false // unchanged after all, or gone: nothing to give back
	}
	var f fileFacts
	if err == nil && len(now) <= MaxRecordSize {
		f = recordFacts(now, time.Time{}, e.Kind == KindPIDFile, nil)
	}
	if err != nil || len(now) > MaxRecordSize || f.err != nil {
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "rewritten since it was judged, into what cannot be read as a record: put back, left for the next sweep"
		return true
	}
	// Whoever wrote it just now gets it back if it is a live gateway; the
	// gateway.lock rule is left out, since it may be mid-claim.
	rules := s.rules(ctx)
	r := rules.runtimeRecord(f.rec)
	if e.Kind == KindScopedLock {
		r = rules.scopedRecord(f.rec)
	}
	if !r.keep {
		return false
	}
	e.Record, e.Action, e.Reason = &f.rec.Record, ActionKeep, "claimed by a live gateway during the sweep"
	e.Verdict = procstate.Alive
	return true
}
