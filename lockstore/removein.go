package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// removeIn is remove in the lock dir, through ld, with stillJudged's
// check and probe joined into one: Hold opens the file, stamps the very
// file it opened and locks it, and on POSIX keeps the lock through the
// rename and the unlink, so that no process can take it between the probe
// and the move. The file is renamed aside into the bin (see binName), or
// to <name>.stale without one. Per file that is an open, fstat, flock,
// rename, fstatat, unlink and close, each on a name in an opened
// directory.
func (s *Store) removeIn(ctx context.Context, ld *safefs.Dir, bin *sweepBin, name string, e *judged) {
	to, aside := bin.aside(ld, name)
	if s.beforeRemove != nil {
		s.beforeRemove(e.Path)
	}
	h, ok := s.holdJudged(ld, name, e)
	if !ok {
		return
	}
	defer h.Release()
	if s.beforeMove != nil {
		s.beforeMove(e.Path)
	}
	if err := ld.MoveTo(name, to, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			e.Action, e.Reason = ActionOK, "already gone"
			return
		}
		s.fail(e, "rename", err)
		return
	}
	// As in remove: an unchanged stamp proves nobody replaced or rewrote
	// the file since it was judged.
	st, err := to.Stamp(aside)
	if err == nil && !st.SameFile(e.stamp) || errors.Is(err, safefs.ErrNotRegular) {
		// Linked back, never replacing: under its name, or else beside
		// it, where no sweep removes it.
		kept, err := keepAs(name, func(n string) error { return to.LinkTo(aside, ld, n) })
		if err == nil {
			_ = to.Remove(aside)
		}
		where := aside
		if to != ld {
			where = filepath.Join(binName, aside)
		}
		s.putBack(e, kept, where, err)
		return
	}
	if err != nil || !st.Same(e.stamp) {
		now, _, err := to.Read(aside, MaxRecordSize+1)
		if s.claimedSince(ctx, now, err, e) {
			_ = to.LinkTo(aside, ld, name) // fails harmlessly if a newer file took the name
			_ = to.Remove(aside)
			return
		}
	}
	if err := to.Remove(aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.fail(e, "remove", err)
		return
	}
	e.Action = ActionSwept
}

// holdJudged is stillJudged through Hold: name must still be the file
// judged, and no other process may hold it locked. It returns the file
// held, to be let go once it is moved.
func (s *Store) holdJudged(ld *safefs.Dir, name string, e *judged) (*safefs.Held, bool) {
	h, st, err := ld.Hold(name)
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
