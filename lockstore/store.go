package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Kind classifies a file the store judges.
type Kind string

// The kinds of files in a Hermes home and lock directory.
const (
	KindPIDFile     Kind = "pid-file"
	KindRuntimeLock Kind = "runtime-lock"
	KindScopedLock  Kind = "scoped-lock"
	KindState       Kind = "state"
	KindMarker      Kind = "marker"
	KindLeftover    Kind = "leftover"
)

// Action is what a sweep did, or would do, with a file.
type Action string

// The actions of a sweep.
const (
	// ActionKeep: a live or unknown owner; the file is never touched.
	ActionKeep Action = "keep"
	// ActionSweep: stale, and would be removed (dry run).
	ActionSweep Action = "sweep"
	// ActionSwept: stale, and removed.
	ActionSwept Action = "swept"
	// ActionMarkStopped: gateway_state.json rewritten as stopped.
	ActionMarkStopped Action = "mark-stopped"
	// ActionOK: nothing to do.
	ActionOK Action = "ok"
	// ActionQuarantine: corrupt, and would be moved aside (dry run).
	ActionQuarantine Action = "quarantine"
	// ActionQuarantined: corrupt, and moved aside to <name>.corrupt, or
	// <name>.corrupt.N when that name is taken: never over an earlier one.
	ActionQuarantined Action = "quarantined"
	// ActionError: could not be read or acted on; the file was kept.
	ActionError Action = "error"
)

// Entry is the verdict on one file.
type Entry struct {
	Path    string            `json:"path"`
	Kind    Kind              `json:"kind"`
	Record  *Record           `json:"record,omitempty"`
	Verdict procstate.Verdict `json:"verdict"`
	Reason  string            `json:"reason"`
	Action  Action            `json:"action"`
	Err     error             `json:"-"`
	Error   string            `json:"error,omitempty"`
}

// Grace is how young an empty, cut-short or temporary file may be and
// still be left alone: a gateway may be between its O_EXCL create and its
// write.
const Grace = 10 * time.Second

// Store judges, sweeps and releases the files of one Layout.
type Store struct {
	// large serializes reads of files over MaxRecordSize, so that many
	// huge files in a lock dir cost one maxReadable buffer at a time.
	large  sync.Mutex
	open   keptOpen // lock-dir files kept open from judging to acting
	heldMu sync.Mutex
	held   *sweepDirs // see Hold
	kept   *sweepDirs // the directories the last Hold left open (see Hold); only Hold uses it
	layout Layout
	prober *procstate.Prober
	log    logfield.Logger
	now    func() time.Time
	// own are command lines the supervisor starts: they count as gateways.
	own [][]string
	// busyMax bounds the goroutines a sweep keeps busy (WithWorkers); zero
	// means GOMAXPROCS.
	busyMax int
	// onFanOut is called as a sweep first has files enough for several
	// goroutines (WithFanOut); nil for nothing.
	onFanOut func() (done func())
	// beforeJudge, set only by tests, runs as a lock-dir file is read for
	// judging, on the goroutine that reads it.
	beforeJudge func(path string)
	// beforeRemove, set only by tests, runs between judging a file and
	// renaming it: the window in which a gateway may claim it.
	beforeRemove func(path string)
	// beforeMove, set only by tests, runs after the file judged was
	// checked (and locked, in the lock dir) and before its name is moved
	// aside: the window in which the name may come to hold another file.
	beforeMove func(path string)
	// afterMove, set only by tests, runs once the name was moved aside and
	// before the file moved is stamped again: the window in which the
	// name is free for another file.
	afterMove func(path string)
}

// New returns a Store over l.
func New(l Layout, p *procstate.Prober, log logfield.Logger, now func() time.Time) *Store {
	return &Store{layout: l, prober: p, log: log, now: now}
}

// WithGatewayCommand makes the store count argv, a command line the
// supervisor starts as the gateway, as a gateway wherever Hermes' rules
// ask for one; it returns s. Call it before the store is used.
func (s *Store) WithGatewayCommand(argv []string) *Store {
	if len(argv) > 0 {
		s.own = append(s.own, slices.Clone(argv))
	}
	return s
}

// Layout returns the files the store works on.
func (s *Store) Layout() Layout { return s.layout }

// judged is an Entry plus what a sweep needs to act safely.
type judged struct {
	Entry
	facts fileFacts        // what was read, for the rules
	stamp safefs.FileStamp // the version judged, to see if it was replaced
	// in is the directory the file was listed in and is acted on through,
	// when it is not the home or the lock dir (the bin's leftovers).
	in *safefs.Dir
	// open is the file judged, still open for its removal (see keptOpen).
	open *safefs.Opened
	// released: the record names a gateway that has just exited, and the
	// file is released, not judged (see released).
	released bool
}

// set records the rules' decision on e.
func (e *judged) set(d decision) {
	e.Record, e.Verdict, e.Action, e.Reason = d.record, d.verdict, d.action, d.reason
}

// Scan judges every file and changes nothing.
func (s *Store) Scan(ctx context.Context) ([]Entry, error) {
	js, err := s.judgeAll(ctx)
	return entries(js), err
}

func entries(js []judged) []Entry {
	out := make([]Entry, len(js))
	for i, j := range js {
		out[i] = j.Entry
		if j.Err != nil {
			out[i].Error = j.Err.Error()
		}
	}
	return out
}

func (s *Store) judgeAll(ctx context.Context) ([]judged, error) {
	var out []judged
	home := -1
	_, err := s.judgeEach(ctx, nil, nil, nil, true, nil, func(js []judged) {
		out = append(out, js...)
		if home < 0 {
			home = len(out)
		}
	})
	sortLockDir(out[max(home, 0):], func(j judged) string { return j.Path })
	return out, err
}

// judgeBatch is how many lock-dir files are judged, and acted on, at a
// time: what a sweep holds is bounded by it, not by the lock dir.
const judgeBatch = 2048

// judgeEach judges every file (without leftovers, all but the home's and
// the bin's leftovers), the home's first, then the lock dir's in
// batches of judgeBatch as they are listed, and the bin's own leftovers
// last, and hands each batch to f, which must not keep the slice once it
// returns (the lock dir's batches are reused; see batch). With act, an
// acting sweep's, each file is acted on as soon as it is judged, on the
// goroutine that judged it: a batch is read in one pass over its files
// and judged and acted on in a second, as the bare system calls of a
// sweep would be made, where judging every file, then every pid named,
// then acting, left goroutines waiting between each step. A token lock
// act would move is then probed for a holder only just before the move
// (removeIn), not also here. ld, when not nil, is the lock dir the
// caller acts in: its files are read through it, so that what is judged
// is in the directory acted on. The error joins every file's, as judged
// or as acted on.
func (s *Store) judgeEach(ctx context.Context, ld *safefs.Dir, bin *sweepBin, rel released, leftovers bool, act func(worker int, e *judged), f func(js []judged)) (*Entry, error) {
	var errs []error
	fo := s.fanOut()
	defer fo.end()
	done := func(js []judged) {
		for _, e := range js {
			if e.Err != nil {
				errs = append(errs, e.Err)
			}
		}
		f(js)
	}
	actOn := func(js []judged) {
		if act != nil {
			fo.on(len(js), fileItems, func(worker, i int) { act(worker, &js[i]) })
		}
	}
	home, runs, err := s.judgeHomeFiles(ctx, rel, leftovers)
	if err != nil {
		errs = append(errs, err)
	}
	actOn(home)
	done(home)
	if slices.ContainsFunc(home, stillThere) {
		// Judged as if it were gone, it is not: replaced since it was
		// read, held, or not removable. Whether a gateway runs there is
		// asked of the home as it now stands, as a sweep after a
		// separate release would; the pid file, if it cannot be read
		// now, is an error, as it was to that sweep (the other files'
		// errors were said by the first look).
		var again []judged
		again, runs, _ = s.judgeHomeFiles(ctx, nil, false)
		for _, e := range again {
			if e.Kind == KindPIDFile && e.Err != nil {
				errs = append(errs, e.Err)
			}
		}
	}
	var b batch
	err = s.eachLockDirBatch(ld, judgeBatch, func(names []string) {
		done(s.judgeLockFiles(ctx, fo, b.get(len(names)), names, ld, rel, act))
		b.done()
	})
	if err != nil {
		errs = append(errs, err)
	}
	if !leftovers {
		return runs, errors.Join(errs...)
	}
	// Old by the time they are judged, so no file of this sweep. A bin
	// that could not be listed leaves the others' leftovers judged.
	left, err := s.binLeftovers(bin)
	if err != nil {
		errs = append(errs, err)
	}
	if len(left) > 0 {
		actOn(left)
		done(left)
	}
	return runs, errors.Join(errs...)
}

// stillThere reports a released file that the release left where it was
// (ActionOK: it was gone already).
func stillThere(e judged) bool {
	return e.released && e.Action != ActionSwept && e.Action != ActionOK
}

// judgeHomeFiles judges gateway.lock, gateway.pid, the state file, the
// markers and, with leftovers, the home's leftovers. runs is the gateway
// that runs in the home as Running finds it, nil for none. A gateway.pid
// of rel is released, and the rest judged as if it were gone already.
// The error is the listing's of the home's leftovers: each file's own
// is in its entry.
func (s *Store) judgeHomeFiles(ctx context.Context, rel released, leftovers bool) (_ []judged, runs *Entry, _ error) {
	l := s.layout
	var errs []error
	h := s.readHome()
	var freed []judged
	if h.pidFound && rel.release(&h.pid) {
		freed = append(freed, h.pid)
		h.pid, h.pidFound = judged{}, false
	}
	state, stateFound := s.readRecord(l.StateFile(), KindState, false, false)
	markers := make([]judged, 0, 2)
	for _, p := range []string{l.PlannedStopMarker(), l.TakeoverMarker()} {
		if e, ok := s.read(p, KindMarker); ok {
			markers = append(markers, e)
		}
	}
	var homeLeft []judged
	if leftovers {
		// Only names Hermes or we write: the home also holds the user's
		// and the agent's own files, which may end in .stale or .tmp too.
		var err error
		homeLeft, err = s.leftovers(l.Home, isHomeLeftover)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	r := s.rules(ctx)
	st := readable(state, stateFound)
	s.judgeHome(r, &h, st)
	if e, ok := running(&h, state, st); ok {
		runs = &e
	}
	if stateFound && state.Action != ActionError {
		s.settle(&state, r.stateFile(state.facts))
	}
	for i := range markers {
		if markers[i].Action != ActionError {
			s.settle(&markers[i], r.markerFile(markers[i].facts))
		}
	}
	var out []judged
	add := func(e judged, ok bool) {
		if ok {
			out = append(out, e)
		}
	}
	out = append(out, freed...)
	add(h.pid, h.pidFound)
	add(h.lock, h.lockFound)
	add(state, stateFound)
	out = append(out, markers...)
	out = append(out, homeLeft...)
	return out, runs, errors.Join(errs...)
}

// judgeLockFiles judges the lock dir's files of names into lockFiles (as
// many zeroed entries as names): Hermes' token locks by its rules (those
// of rel released), leftovers by age; other names are not ours to judge.
// Every file is read first; then each is judged and, with act, acted on
// at once by the goroutine that judged it.
func (s *Store) judgeLockFiles(ctx context.Context, fo *fanOut, lockFiles []judged, names []string, ld *safefs.Dir, rel released, act func(worker int, e *judged)) []judged {
	acting := act != nil
	found := make([]bool, len(names))
	fo.by(len(names), fileItems, func(i int) {
		p := filepath.Join(s.layout.LockDir, names[i])
		if s.beforeJudge != nil {
			s.beforeJudge(p)
		}
		switch n := names[i]; {
		case isTokenLock(n):
			lockFiles[i], found[i] = s.readRecordIn(ld, p, KindScopedLock, false, true, acting)
			if found[i] {
				rel.release(&lockFiles[i])
			}
		case isLockDirLeftover(n):
			lockFiles[i], found[i] = s.judgeLeftover(p)
		case len(rel) > 0 && strings.HasSuffix(n, ".lock"):
			// Not Hermes' shape, so no sweep judges it; but a record of
			// the exited gateway's all the same, which Release takes,
			// read as Release reads it: no more than a record's size.
			lockFiles[i], found[i] = rel.readReleasable(p, KindScopedLock, func(p string) ([]byte, safefs.FileStamp, error) {
				if ld != nil {
					return ld.Read(filepath.Base(p), MaxRecordSize+1)
				}
				return safefs.ReadRegular(p, MaxRecordSize+1)
			})
		}
	})
	// The rules look at a pid only now, once the whole batch is read, and
	// once for all the records naming it: a look judges only records read
	// before it, since a gateway continued, or a pid reused, after a look
	// may have written a record read later (TestLookTakenAfterTheRead).
	r := s.rules(ctx)
	fo.on(len(names), fileItems, func(worker, i int) {
		e := &lockFiles[i]
		switch {
		case !found[i]:
		case e.Kind != KindScopedLock || e.Action == ActionError || e.released:
		case acting:
			// Probed by removeIn before any move: once is enough.
			e.set(r.scopedLockFile(e.facts))
		default:
			s.settle(e, r.scopedLockFile(e.facts))
		}
		if found[i] && acting {
			act(worker, e)
		}
		s.closeOpen(e) // kept, or not removed: no longer kept from other files
	})
	out := lockFiles[:0]
	for i := range lockFiles {
		if found[i] {
			out = append(out, lockFiles[i])
		}
	}
	return out
}

// readable returns e's facts when e was found and read, else nil.
func readable(e judged, found bool) *fileFacts {
	if !found || e.Action == ActionError {
		return nil
	}
	return &e.facts
}

// settle records the rules' decision d on e, after the last rule: a file
// the rules would move is first probed for a lock its holder keeps.
func (s *Store) settle(e *judged, d decision) {
	if removes(d.action) {
		e.facts.held, e.facts.heldErr = fileHeld(e.Path)
		d = keepHeld(e.facts, d)
	}
	e.set(d)
}

// homeFiles are gateway.lock and gateway.pid as read for judging, and
// what probing gateway.lock found.
type homeFiles struct {
	lock, pid           judged
	lockFound, pidFound bool
	lockState           lockState
	// pidDecision is the rules' on gateway.pid, once judged and readable.
	pidDecision *decision
	// stateRuns: gateway.lock is not held and gateway_state.json names
	// a running gateway of this home (get_running_pid's fallback);
	// stateHolds: or one of another profile, which that fallback, asked
	// unscoped by Hermes' start-up, takes as well (runtimeStatus).
	stateRuns, stateHolds bool
}

// readHome reads gateway.lock and probes it first, since it decides what
// gateway.pid means, then gateway.pid.
func (s *Store) readHome() homeFiles {
	var h homeFiles
	h.lock, h.lockFound = s.readRecord(s.layout.RuntimeLock(), KindRuntimeLock, true, false)
	switch {
	case !h.lockFound:
		h.lockState = lockNone
	case h.lock.Action == ActionError:
		h.lockState = lockUnknown
	default:
		held, err := s.RuntimeLockHeld()
		switch {
		case err != nil:
			h.lockState = lockUnknown
			h.lock.Action, h.lock.Reason = ActionError, "cannot probe the lock"
			h.lock.Err = &FileError{Path: h.lock.Path, Op: "probe lock", Err: err, Hint: hintFor(err)}
		case held:
			h.lockState = lockHeld
		default:
			h.lockState = lockFree
		}
	}
	h.pid, h.pidFound = s.readRecord(s.layout.PIDFile(), KindPIDFile, true, true)
	return h
}

// judgeHome applies get_running_pid's rules to gateway.lock and
// gateway.pid; state is gateway_state.json's facts for its fallback (nil
// when absent or unreadable).
func (s *Store) judgeHome(r *rules, h *homeFiles, state *fileFacts) {
	var lockRec *fileFacts
	if h.lockFound && h.lock.Action != ActionError {
		lockRec = &h.lock.facts
		h.lock.set(r.runtimeLockFile(h.lock.facts, h.lockState == lockHeld))
	}
	if h.lockState != lockHeld {
		h.stateRuns, h.stateHolds = r.runtimeStatus(state)
	}
	if h.pidFound && h.pid.Action != ActionError {
		d := r.pidFile(h.pid.facts, h.lockState, lockRec, h.stateHolds)
		s.settle(&h.pid, d)
		d = decision{record: h.pid.Record, verdict: h.pid.Verdict, action: h.pid.Action, reason: h.pid.Reason}
		h.pidDecision = &d
	}
}
