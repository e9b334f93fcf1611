package lockstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// removeIn is remove in the lock dir, through ld, with stillJudged's
// check and probe joined into one: HoldOpened stamps the name, and only
// if it still names the very file judging opened and kept open, locks
// that file, and on POSIX keeps the lock through the rename and the
// unlink, so that no process can take it between the probe and the move.
// The file is renamed aside into the bin (see binName), or to
// <name>.stale without one. Per file, after judging's open, fstat and
// read, that is an fstatat, flock, rename, fstatat, unlink and close,
// each on a name in an opened directory (an open and fstat more where
// the file was not kept open: see keptOpen).
func (s *Store) removeIn(ctx context.Context, ld *safefs.Dir, bin *sweepBin, name string, e *judged) {
	s.asideIn(ctx, ld, bin, name, e, func(to *safefs.Dir, aside string) {
		if err := to.Remove(aside); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.fail(e, "remove", err)
			return
		}
		e.Action = ActionSwept
	})
}

// asideIn moves name in ld, e's file, aside as removeIn does, and hands
// it to then, still held, only once the file moved is proven to be the
// very file judged: a name checked and then acted on can change hands in
// between, so only the re-stamp of the file moved, under a name no one
// else writes, proves what was moved. Anything else is put back under its
// name, never replacing a file, and then is not called.
func (s *Store) asideIn(ctx context.Context, ld *safefs.Dir, bin *sweepBin, name string, e *judged, then func(to *safefs.Dir, aside string)) {
	to, aside := bin.aside(ld, name)
	if s.beforeRemove != nil {
		s.beforeRemove(e.Path)
	}
	h, ok := s.holdJudged(ld, name, e)
	if !ok {
		return
	}
	defer h.Release()
	if !s.moveAside(e, func() error { return ld.MoveTo(name, to, aside) }) {
		return
	}
	moved := movedFile{
		stamp: func() (safefs.FileStamp, error) { return to.Stamp(aside) },
		read:  func() ([]byte, safefs.FileStamp, error) { return to.Read(aside, MaxRecordSize+1) },
		where: func() string { return bin.placeOf(aside) },
		// Back as moveNoReplaceIn moves it: never replacing a file,
		// under its name or else beside it.
		back: func(n string) error { return moveNoReplaceIn(to, aside, ld, n) },
	}
	if !s.provenAside(ctx, e, name, moved) {
		return
	}
	then(to, aside)
}

// quarantineIn moves name in ld, a corrupt file, to the first free name
// of <name>.corrupt, <name>.corrupt.1, ... beside it, never replacing a
// file, by way of asideIn: review-2 found a check of the name and then a
// link of it moved a live gateway's fresh lock, which had taken the name
// in between, to .corrupt and freed its token for a second gateway.
func (s *Store) quarantineIn(ctx context.Context, ld *safefs.Dir, bin *sweepBin, name string, e *judged) {
	s.asideIn(ctx, ld, bin, name, e, func(to *safefs.Dir, aside string) {
		dst, err := firstFree(name+".corrupt", func(dst string) error { return moveNoReplaceIn(to, aside, ld, dst) })
		if err == nil {
			e.Action = ActionQuarantined
			e.Reason += "; moved aside to " + filepath.Join(filepath.Dir(e.Path), dst)
			return
		}
		// Not left aside, where a later sweep deletes leftovers: back
		// under its name, as it was judged, for a person to see.
		if perr := moveNoReplaceIn(to, aside, ld, name); perr != nil {
			err = fmt.Errorf("%w; and it could not be put back, so it is at %s: move it back by hand before a later sweep removes it as a leftover: %w", err, bin.placeOf(aside), perr)
		}
		s.fail(e, "move aside", err)
	})
}

// moveNoReplaceIn is moveNoReplace between two opened directories: it
// moves name in from to dst in to, failing with os.ErrExist if dst exists.
func moveNoReplaceIn(from *safefs.Dir, name string, to *safefs.Dir, dst string) error {
	err := from.LinkTo(name, to, dst)
	if err == nil {
		return from.Remove(name)
	}
	if errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrNotExist) {
		return err
	}
	// No hard links here: as moveNoReplace, check and rename.
	if _, serr := to.Stamp(dst); serr == nil || errors.Is(serr, safefs.ErrNotRegular) {
		return fmt.Errorf("%s: %w", dst, os.ErrExist)
	}
	return from.MoveTo(name, to, dst)
}

// holdJudged is stillJudged through HoldOpened: name must still be the
// file judged, and no other process may hold it locked. It returns the
// file held, to be let go once it is moved.
func (s *Store) holdJudged(ld *safefs.Dir, name string, e *judged) (*safefs.Held, bool) {
	h, st, err := ld.HoldOpened(name, s.takeOpen(e))
	opened := st.SameFile(st) // the stamp has an identity: the open succeeded
	switch {
	case !opened && errors.Is(err, os.ErrNotExist):
		e.Action, e.Reason = ActionOK, "already gone"
		return nil, false
	case !opened && errors.Is(err, safefs.ErrNotRegular):
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "replaced by a symlink or other non-regular file since it was judged: left alone"
		return nil, false
	case !opened:
		s.fail(e, "stat", err)
		return nil, false
	case !st.SameFile(e.stamp):
		if h != nil {
			h.Release()
		}
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "replaced by another file since it was judged: left alone for the next sweep"
		return nil, false
	case err != nil:
		// A process locked it since it was judged, or the lock could
		// not be tried: kept either way.
		f := e.facts
		if errors.Is(err, safefs.ErrLocked) {
			f.held = true
		} else {
			f.heldErr = errors.Join(errProbe, err)
		}
		e.set(keepHeld(f, decision{record: e.Record, verdict: e.Verdict, action: ActionSweep, reason: e.Reason}))
		return nil, false
	}
	return h, true
}
