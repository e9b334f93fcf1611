package lockstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

func (s *Store) leftovers(dir string, match func(string) bool) ([]judged, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []judged
	for _, d := range des {
		if d.Type().IsRegular() && match(d.Name()) {
			if e, ok := s.judgeLeftover(filepath.Join(dir, d.Name())); ok {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// judgeLeftover: half-done renames and temp files are garbage once they are
// old enough that no writer can still be working on them.
func (s *Store) judgeLeftover(path string) (judged, bool) {
	e := judged{Entry: Entry{Path: path, Kind: KindLeftover, Verdict: procstate.Dead}}
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return e, false
	}
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot stat"
		e.Err = &FileError{Path: path, Op: "stat", Err: err, Hint: hintFor(err)}
		return e, true
	}
	if s.now().Sub(fi.ModTime()) < LeftoverAge {
		e.Verdict, e.Action, e.Reason = procstate.Unknown, ActionKeep, "recent; a writer may still use it"
		return e, true
	}
	e.Action, e.Reason = ActionSweep, "left over by an interrupted write or sweep"
	return e, true
}

// Sweep judges every file and removes the stale ones; with dryRun it only
// reports. It logs one line per file. The error joins the per-file
// *FileErrors; the entries are complete either way.
func (s *Store) Sweep(ctx context.Context, dryRun bool) ([]Entry, error) {
	js, err := s.judgeAll(ctx)
	errs := []error{err} // holds every error of judging already
	judgedErr := make([]bool, len(js))
	for i := range js {
		judgedErr[i] = js[i].Err != nil
	}
	if !dryRun {
		// Each file's rename, re-check and unlink touch that file alone.
		parallel(len(js), func(i int) { s.act(ctx, &js[i]) })
	}
	for i := range js {
		e := &js[i]
		if !dryRun && e.Err != nil && e.Action == ActionError && !judgedErr[i] {
			errs = append(errs, e.Err)
		}
		s.logEntry(e.Entry)
	}
	return entries(js), errors.Join(errs...)
}

func (s *Store) logEntry(e Entry) {
	fields := []zap.Field{zap.String("path", e.Path), zap.String("kind", string(e.Kind)),
		zap.Stringer("verdict", e.Verdict), zap.String("action", string(e.Action)), zap.String("reason", e.Reason)}
	if e.Record != nil {
		fields = append(fields, zap.Int("pid", e.Record.PID))
	}
	if e.Err != nil {
		s.log.Warn("sweep", append(fields, zap.Error(e.Err))...)
		return
	}
	s.log.Info("sweep", fields...)
}

func (s *Store) act(ctx context.Context, e *judged) {
	switch e.Action {
	case ActionSweep:
		if e.Kind == KindLeftover {
			if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.fail(e, "remove", err)
				return
			}
			e.Action = ActionSwept
			return
		}
		s.remove(ctx, e)
	case ActionQuarantine:
		dst, err := quarantine(e.Path)
		if err != nil {
			s.fail(e, "move aside", err)
			return
		}
		e.Action = ActionQuarantined
		e.Reason += "; moved aside to " + dst
	case ActionMarkStopped:
		reason := fmt.Sprintf("owner %s: marked stopped by hermes-supervisor", e.Verdict)
		err := UpdateState(s.layout, s.now(), func(m map[string]any) {
			// Only if nothing rewrote it since it was judged.
			if pid, _ := m["pid"].(float64); int(pid) == e.Record.PID {
				m["gateway_state"] = "stopped"
				m["exit_reason"] = reason
			}
		})
		if err != nil {
			s.fail(e, "rewrite", err)
		}
	}
}

// maxQuarantines bounds the names quarantine tries; a lock dir holding
// that many copies of one corrupt file needs a person, not another copy.
const maxQuarantines = 1000

// quarantine moves path aside to the first free name of <path>.corrupt,
// <path>.corrupt.1, ... and returns it. The rename never replaces a file,
// so an earlier quarantine's bytes are never lost.
func quarantine(path string) (string, error) {
	for i := range maxQuarantines {
		dst := path + ".corrupt"
		if i > 0 {
			dst += "." + strconv.Itoa(i)
		}
		err := platform.RenameNoReplace(path, dst)
		if !errors.Is(err, os.ErrExist) {
			return dst, err
		}
	}
	return "", fmt.Errorf("%s.corrupt through .corrupt.%d all exist: %w", path, maxQuarantines-1, os.ErrExist)
}

// remove follows Hermes: rename to <name>.stale, then unlink. If the file
// changed between judging and the rename, a gateway has just claimed it:
// judge again and put it back unless it is still stale.
func (s *Store) remove(ctx context.Context, e *judged) {
	stale := e.Path + ".stale"
	if s.beforeRemove != nil {
		s.beforeRemove(e.Path)
	}
	if err := os.Rename(e.Path, stale); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			e.Action, e.Reason = ActionOK, "already gone"
			return
		}
		s.fail(e, "rename", err)
		return
	}
	// The rename keeps the inode: an unchanged stamp proves nobody
	// replaced or rewrote the file since it was judged, without reading it.
	if st, err := platform.Stamp(stale); err != nil || !st.Same(e.stamp) {
		s.rejudge(ctx, e, stale)
		if e.Action == ActionKeep {
			return
		}
	}
	if err := os.Remove(stale); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.fail(e, "remove", err)
		return
	}
	e.Action = ActionSwept
}

// rejudge looks again at a file that changed between judging and the
// rename to .stale: a gateway that just claimed it gets it back.
func (s *Store) rejudge(ctx context.Context, e *judged, stale string) {
	now, err := readBounded(stale)
	if err != nil || bytes.Equal(now, e.data) {
		return
	}
	rec, perr := parseHermesRecord(now, e.Kind == KindPIDFile)
	if perr != nil {
		return
	}
	// Whoever wrote it just now gets it back if it is a live gateway; the
	// gateway.lock rule is left out, since it may be mid-claim.
	j := s.newJudge(ctx)
	r := j.runtimeRecord(rec)
	if e.Kind == KindScopedLock {
		r = j.scopedRecord(rec)
	}
	if r.keep {
		_ = os.Link(stale, e.Path) // fails harmlessly if a newer file took the name
		_ = os.Remove(stale)
		e.Record, e.Action, e.Reason = &rec.Record, ActionKeep, "claimed by a live gateway during the sweep"
		e.Verdict = procstate.Alive
	}
}

func (s *Store) fail(e *judged, op string, err error) {
	e.Action = ActionError
	e.Err = &FileError{Path: e.Path, Op: op, Err: err, Hint: hintFor(err)}
}
