package lockstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Sweep judges every file and removes the stale ones; with dryRun it only
// reports. It logs a bounded number of per-file lines and a summary (see
// Summary). The error joins the per-file *FileErrors; the entries are
// complete either way.
func (s *Store) Sweep(ctx context.Context, dryRun bool) ([]Entry, error) {
	var out []Entry
	home := -1
	_, err := s.SweepEach(ctx, dryRun, func(es []Entry) {
		out = append(out, es...)
		if home < 0 {
			home = len(out)
		}
	})
	sortLockDir(out[max(home, 0):], func(e Entry) string { return e.Path })
	return out, err
}

// SweepEach is Sweep handing each batch of entries to each as it is done
// instead of collecting and sorting them: the home's files first, then the
// lock dir's a batch at a time, in the order listed, and any leftovers of
// an earlier sweep's bin last; one call at a time. What it holds is then
// bounded by a few batches however many files the lock dir has, where
// Sweep holds every entry until the end: the sweep for a caller that
// counts or streams its report rather than prints it sorted.
func (s *Store) SweepEach(ctx context.Context, dryRun bool, each func([]Entry)) (Summary, error) {
	return s.sweep(ctx, dryRun, anySweep, nil, func(js []judged) { each(entries(js)) })
}

// Summary counts what a sweep did.
type Summary struct {
	Files   int            // files judged
	Actions map[Action]int // files per action
	// Unlogged is how many per-file lines were left out of the log: a
	// sweep logs at most MaxSweepLines of them.
	Unlogged int
	Took     time.Duration
	// Released is how many of the files named a gateway that has just
	// exited (see SweepBeforeStart), counted among the Actions too.
	Released int
	// Running is the gateway that runs in the home as Running finds it,
	// judged with the rest (nil for none): the sweep keeps its files, so
	// Running just after would find it again, reading the home again.
	Running *Entry
}

// MaxSweepLines bounds the per-file lines one sweep logs of files it
// changed or failed on, and again of files it kept: a lock dir of 100 000
// stale files must not become 100 000 log lines, and a crowd of kept
// files cannot crowd out the removals. The summary line counts them all.
const MaxSweepLines = 100

// SweepBeforeStart is the sweep just before a gateway starts: Sweep
// without the entries (what it holds is bounded by a batch of files,
// however many the lock dir has), which leaves a gateway_state.json that
// says running for a pid no process has to the gateway about to start.
// That gateway rewrites the file as it starts, Hermes' readers already
// count a pid no process has as not running, and the rewrite, a replace
// by rename, was most of a restart's sweep (0.4 ms here). A pid another
// process has taken is still marked stopped: Hermes might take that
// process for its gateway.
//
// released are gateways that have just exited, unreaped: their pid file
// and scoped locks are released in the same pass, as Release would (see
// released), where a Release first and a sweep after read the home and
// listed the lock dir twice on every restart.
func (s *Store) SweepBeforeStart(ctx context.Context, released ...procstate.Identity) (Summary, error) {
	return s.sweep(ctx, false, startSweep, released, nil)
}

// SweepBeforeRestart is SweepBeforeStart for a gateway restarted at once,
// on the restart's path: it leaves the leftovers of the home and of the
// sweep's bin (those of the lock dir come with its listing and are judged)
// to the next SweepBeforeStart. No gateway reads them, and listing the
// home was a third of a restart's sweep here, more in a home full of the
// agent's own files. They are not swept once the new gateway runs: its
// own writes' temps would then be judged by their times alone.
func (s *Store) SweepBeforeRestart(ctx context.Context, released ...procstate.Identity) (Summary, error) {
	return s.sweep(ctx, false, restartSweep, released, nil)
}

// sweepKind is what a sweep is for.
type sweepKind uint8

const (
	anySweep     sweepKind = iota // Sweep and Scan: every file, as it stands
	startSweep                    // SweepBeforeStart: every file, for a gateway about to start
	restartSweep                  // SweepBeforeRestart: the same but the home's and the bin's leftovers
)

func (s *Store) sweep(ctx context.Context, dryRun bool, k sweepKind, rel released, each func([]judged)) (Summary, error) {
	began := s.now()
	// Opened before judging, so that what is judged and what is acted on
	// are in the same directories; each action also checks that its file
	// is still the one judged.
	var dirs sweepDirs
	var derr error
	if !dryRun {
		dirs, derr = s.openDirs()
		// A closure: the lock dir's Dir and bin are opened below.
		defer func() { dirs.close() }()
		derr = errors.Join(derr, s.openLockDir(&dirs))
	}
	ld := dirs.ld // the lock dir's files are judged and acted on through it
	bin := newSweepBin(dirs.bin, s.log)
	defer bin.close()
	sum := Summary{Actions: map[Action]int{}}
	var act func(worker int, e *judged)
	if !dryRun {
		// Each file's rename, re-check and unlink touch that file alone,
		// and its goroutine's bin.
		act = func(worker int, e *judged) { s.act(ctx, dirs, ld, bin, worker, e, k != anySweep) }
	}
	changed, kept := 0, 0 // per-file lines logged of each budget
	report := func(js []judged) {
		for i := range js {
			e := &js[i]
			sum.Files++
			sum.Actions[e.Action]++
			if e.released {
				sum.Released++
			}
			budget := &changed
			if e.Err == nil && (e.Action == ActionKeep || e.Action == ActionOK) {
				budget = &kept
			}
			if e.released {
				// A few per gateway, each logged as Release logs it,
				// however many stale files crowd the budgets.
				budget = new(int)
			}
			if *budget >= MaxSweepLines {
				sum.Unlogged++
				continue
			}
			*budget++
			s.logEntry(e.Entry)
		}
		if each != nil {
			each(js)
		}
	}
	runs, err := s.judgeEach(ctx, ld, bin, rel, k != restartSweep, act, report)
	sum.Took, sum.Running = s.now().Sub(began), runs
	fields := []zapcore.Field{logfield.Int("files", sum.Files), logfield.Duration("took", sum.Took), logfield.Bool("dry_run", dryRun)}
	for _, a := range []Action{ActionSwept, ActionSweep, ActionQuarantined, ActionQuarantine, ActionMarkStopped, ActionKeep, ActionOK, ActionError} {
		if n := sum.Actions[a]; n > 0 {
			fields = append(fields, logfield.Int(string(a), n))
		}
	}
	if sum.Unlogged > 0 {
		fields = append(fields, logfield.Int("per_file_lines_not_logged", sum.Unlogged))
	}
	logf := s.log.Info
	if sum.Files == sum.Released && sum.Actions[ActionSwept] == sum.Files {
		// Nothing there but what the gateway that just exited left, each
		// released and its release logged: a restart's sweep of clean
		// directories says so at debug level, not in every restart's lines.
		logf = s.log.Debug
	}
	logf("sweep done", fields...)
	return sum, errors.Join(err, derr)
}

func (s *Store) logEntry(e Entry) {
	fields := []zapcore.Field{logfield.String("path", e.Path), logfield.String("kind", string(e.Kind)),
		logfield.Stringer("verdict", e.Verdict), logfield.String("action", string(e.Action)), logfield.String("reason", e.Reason)}
	if e.Record != nil {
		fields = append(fields, logfield.Int("pid", e.Record.PID))
	}
	if e.Err != nil {
		s.log.Warn("sweep", append(fields, logfield.Error(e.Err))...)
		return
	}
	s.log.Info("sweep", fields...)
}

// act carries out e's action; worker is the sweep's goroutine acting,
// which moves a file into its own bin (see workerBins).
func (s *Store) act(ctx context.Context, dirs sweepDirs, ld *safefs.Dir, bin *sweepBin, worker int, e *judged, beforeStart bool) {
	if e.in != nil {
		if e.Action == ActionSweep {
			s.removeHeld(e.in, filepath.Base(e.Path), e)
		}
		return
	}
	switch e.Action {
	case ActionSweep, ActionQuarantine:
		s.moveJudged(ctx, dirs, ld, bin.forWorker(worker), e)
	case ActionMarkStopped:
		// A zombie never writes again, and Hermes main counts it dead
		// (older Hermes reads no state file): the gateway that just
		// exited is one until it is reaped, after the next start.
		if beforeStart && (e.Verdict == procstate.Dead || e.Verdict == procstate.Zombie) {
			e.Action = ActionOK
			e.Reason += "; left for the gateway starting now to rewrite"
			return
		}
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

// moveJudged removes or quarantines e, as its action says (a released
// file is removed), through the opened directory that holds it, and only
// the very file judged: in the lock dir through ld and the bin
// (removeIn), in the home by a rename to .stale (remove). A quarantine
// in the home, rare, opens the home as a safefs.Dir for the moves of
// quarantineIn.
func (s *Store) moveJudged(ctx context.Context, dirs sweepDirs, ld *safefs.Dir, bin *sweepBin, e *judged) {
	root, name, err := dirs.of(s.layout, e.Path)
	if err != nil {
		s.fail(e, "open directory", err)
		return
	}
	inLockDir := ld != nil && root == dirs.lock
	switch {
	case e.Action == ActionQuarantine && inLockDir:
		s.quarantineIn(ctx, ld, bin, name, e)
	case e.Action == ActionQuarantine:
		d, err := safefs.OpenIn(root)
		if err != nil {
			s.fail(e, "open directory", err)
			return
		}
		defer d.Close()
		s.quarantineIn(ctx, d, nil, name, e)
	case e.Kind == KindLeftover:
		s.unlinkJudged(root, name, e, "remove")
	case inLockDir:
		s.removeIn(ctx, ld, bin, name, e)
	default:
		s.remove(ctx, root, name, e)
	}
}

// stillJudged reports whether name in root is still the file judged (same
// device and inode, or file index). Another file under its name, even
// with the same bytes, was not judged: it is kept for the next sweep, and
// the entry says so.
func (s *Store) stillJudged(root *os.Root, name string, e *judged) bool {
	st, err := safefs.RootStamp(root, name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		e.Action, e.Reason = ActionOK, "already gone"
		return false
	case errors.Is(err, safefs.ErrNotRegular):
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "replaced by a symlink or other non-regular file since it was judged: left alone"
		return false
	case err != nil:
		s.fail(e, "stat", err)
		return false
	case !st.SameFile(e.stamp):
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "replaced by another file since it was judged: left alone for the next sweep"
		return false
	}
	// A process may have locked it since it was judged.
	f := e.facts
	f.held, f.heldErr = fileHeld(e.Path)
	if d := keepHeld(f, decision{record: e.Record, verdict: e.Verdict, action: ActionSweep, reason: e.Reason}); d.action == ActionKeep {
		e.set(d)
		return false
	}
	return true
}

// maxQuarantines bounds the names quarantineIn tries; a lock dir holding
// that many copies of one corrupt file needs a person, not another copy.
const maxQuarantines = 1000

// firstFree moves a file, with move (which never replaces one: it fails
// with os.ErrExist), to the first free name of base, base.1, ... (at most
// maxQuarantines of them), and returns the name it got.
func firstFree(base string, move func(string) error) (string, error) {
	for i := range maxQuarantines {
		dst := base
		if i > 0 {
			dst += "." + strconv.Itoa(i)
		}
		if err := move(dst); !errors.Is(err, os.ErrExist) {
			return dst, err
		}
	}
	return "", fmt.Errorf("%s through %s.%d all exist: %w", base, base, maxQuarantines-1, os.ErrExist)
}

// moveNoReplace renames name to dst inside root, failing with os.ErrExist
// if dst exists. os.Root has no no-replace rename, so it links, which
// never replaces, and then drops the old name; a crash between the two
// leaves both names and loses no bytes. Where the file system has no hard
// links it checks that dst is free and renames: a file created at dst in
// between would be replaced, a race left open only on such file systems.
func moveNoReplace(root *os.Root, name, dst string) error {
	err := root.Link(name, dst)
	if err == nil {
		return safefs.RemoveIn(root, name)
	}
	if errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, lerr := root.Lstat(dst); lerr == nil {
		return fmt.Errorf("%s: %w", dst, os.ErrExist)
	}
	return root.Rename(name, dst)
}

// remove follows Hermes: rename to <name>.stale, then unlink, all inside
// the opened directory. A file replaced since it was judged is left
// alone; if it changed in place between judging and the rename, a
// gateway has just claimed it: judge again and put it back unless it is
// still stale.
func (s *Store) remove(ctx context.Context, root *os.Root, name string, e *judged) {
	stale := name + ".stale"
	if s.beforeRemove != nil {
		s.beforeRemove(e.Path)
	}
	if !s.stillJudged(root, name, e) {
		return
	}
	if !s.moveAside(e, func() error { return root.Rename(name, stale) }) {
		return
	}
	moved := movedFile{
		stamp: func() (safefs.FileStamp, error) { return safefs.RootStamp(root, stale) },
		read:  func() ([]byte, safefs.FileStamp, error) { return safefs.ReadRoot(root, stale, MaxRecordSize+1) },
		where: func() string { return stale },
		back:  func(n string) error { return moveNoReplace(root, stale, n) },
	}
	if !s.provenAside(ctx, e, name, moved) {
		return
	}
	if err := safefs.RemoveIn(root, stale); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.fail(e, "remove", err)
		return
	}
	e.Action = ActionSwept
}

func (s *Store) fail(e *judged, op string, err error) {
	e.Action = ActionError
	e.Err = &FileError{Path: e.Path, Op: op, Err: err, Hint: hintFor(err)}
}
