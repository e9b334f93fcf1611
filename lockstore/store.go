package lockstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform"
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
	layout Layout
	prober *procstate.Prober
	log    *zap.Logger
	now    func() time.Time
	// own are command lines the supervisor starts: they count as gateways.
	own [][]string
	// beforeRemove, set only by tests, runs between judging a file and
	// renaming it: the window in which a gateway may claim it.
	beforeRemove func(path string)
}

// New returns a Store over l.
func New(l Layout, p *procstate.Prober, log *zap.Logger, now func() time.Time) *Store {
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
	data  []byte
	stamp platform.FileStamp // the version judged, to see if it was replaced
}

// judge holds one sweep's rules and looks at each process once, so that
// many files naming one process cost one look.
type judge struct {
	rules
	ctx    context.Context
	prober *procstate.Prober
	// lock is gateway.lock as found at the start of the sweep.
	lock lockState
	mu   sync.Mutex
	seen map[int]looked
}

type looked struct {
	live procstate.Live
	err  error
}

// lockState is what gateway.lock says about the home.
type lockState int

const (
	lockNone    lockState = iota // no gateway.lock file: perhaps a Hermes older than it
	lockFree                     // the file exists and nobody holds it: no gateway runs
	lockHeld                     // a live process holds it
	lockUnknown                  // it could not be probed
)

func (s *Store) newJudge(ctx context.Context) *judge {
	j := &judge{ctx: ctx, prober: s.prober, seen: map[int]looked{}}
	j.rules = rules{home: s.layout.Home, now: s.now(), own: s.own, look: j.look}
	return j
}

func (j *judge) look(pid int) (procstate.Live, error) {
	j.mu.Lock()
	r, ok := j.seen[pid]
	j.mu.Unlock()
	if ok {
		return r.live, r.err
	}
	// Two workers may look at one pid at once; both get an answer.
	r.live, r.err = j.prober.Look(j.ctx, pid)
	j.mu.Lock()
	j.seen[pid] = r
	j.mu.Unlock()
	return r.live, r.err
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines. Sweeps of big
// lock dirs spend their time in system calls on independent files, so
// they finish sooner; small ones stay on the caller's goroutine.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/32)
	if workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
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
	j := s.newJudge(ctx)
	var out []judged
	var errs []error
	add := func(e judged, ok bool) {
		if ok {
			out = append(out, e)
		}
	}
	l := s.layout
	// gateway.lock first: it decides what gateway.pid means.
	lockEntry, lockFound := s.judgeRuntimeLock(j)
	add(s.judgePIDFile(j))
	add(lockEntry, lockFound)
	add(s.judgeStateFile(j))
	add(s.judgeMarker(l.PlannedStopMarker()))
	add(s.judgeMarker(l.TakeoverMarker()))
	// Only names Hermes or we write: the home also holds the user's and
	// the agent's own files, which may end in .stale or .tmp too.
	homeLeft, err := s.leftovers(l.Home, l.isHomeLeftover)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	out = append(out, homeLeft...)

	names, err := s.lockDirNames()
	if err != nil {
		errs = append(errs, err)
	}
	lockFiles := make([]judged, len(names))
	found := make([]bool, len(names))
	parallel(len(names), func(i int) {
		p := filepath.Join(l.LockDir, names[i])
		switch n := names[i]; {
		case strings.HasSuffix(n, ".lock"):
			lockFiles[i], found[i] = s.judgeScopedLock(j, p)
		case isLockDirLeftover(n):
			lockFiles[i], found[i] = s.judgeLeftover(p)
		}
	})
	for i := range lockFiles {
		add(lockFiles[i], found[i])
	}
	for _, e := range out {
		if e.Err != nil {
			errs = append(errs, e.Err)
		}
	}
	return out, errors.Join(errs...)
}

func (s *Store) lockDirNames() ([]string, error) {
	dir := s.layout.LockDir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, &FileError{Path: dir, Op: "stat", Err: err, Hint: "fix the lock directory's permissions or point HERMES_GATEWAY_LOCK_DIR elsewhere"}
	case !fi.IsDir():
		return nil, &FileError{Path: dir, Err: errors.New("not a directory"), Hint: "point HERMES_GATEWAY_LOCK_DIR (or --lock-dir) at a directory, or remove the file"}
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, &FileError{Path: dir, Op: "list", Err: err, Hint: "fix the lock directory's permissions or run as its owner"}
	}
	names := make([]string, 0, len(des))
	for _, d := range des {
		if d.Type().IsRegular() {
			names = append(names, d.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// read loads a file for judging; ok is false when it does not exist.
func (s *Store) read(path string, kind Kind) (judged, bool) {
	e := judged{Entry: Entry{Path: path, Kind: kind}}
	var err error
	e.data, e.stamp, err = platform.ReadRegular(path, MaxRecordSize+1)
	if errors.Is(err, os.ErrNotExist) {
		return e, false
	}
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot read"
		e.Err = &FileError{Path: path, Op: "read", Err: err, Hint: hintFor(err)}
	}
	return e, true
}

func hintFor(err error) string {
	if h := readHint(err); h != "" {
		return h
	}
	return "remove or fix it by hand; it was kept"
}

func (s *Store) young(t time.Time) bool { return s.now().Sub(t) < Grace }

// corrupt handles a record Hermes cannot read. Hermes unlinks it at once;
// stricter than Hermes, an empty or cut-short one younger than Grace is
// kept, since its writer may be between its O_EXCL create and its write.
// The rest is moved aside, which frees the name as an unlink would.
func (s *Store) corrupt(e judged, err error) judged {
	e.Verdict = procstate.Unknown
	if mayBeMidWrite(e.data) && s.young(e.stamp.ModTime()) {
		e.Action, e.Reason = ActionKeep, "recently written, maybe mid-write: "+oneLine(err.Error())
		return e
	}
	e.Action, e.Reason = ActionQuarantine, oneLine(err.Error())
	return e
}

func (e *judged) rule(rec hermesRecord, r ruling) {
	e.Record = &rec.Record
	e.Verdict, e.Reason = r.verdict, r.reason
	e.Action = ActionSweep
	if r.keep {
		e.Action = ActionKeep
	}
}

// judgePIDFile applies get_running_pid. gateway.lock decides: held, the
// file stands while its record (or gateway.lock's own) names a live
// gateway of this home; free, no gateway runs and the file is stale.
// Stricter than Hermes: with no gateway.lock file at all the file may be
// an older Hermes's, and stands while its record names a live gateway.
func (s *Store) judgePIDFile(j *judge) (judged, bool) {
	e, ok := s.read(s.layout.PIDFile(), KindPIDFile)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	rec, err := parseHermesRecord(e.data, true)
	if err == nil && !rec.pidOK {
		err = &CorruptError{Reason: `no usable "pid"`}
	}
	rec.writer = e.stamp.Owner()
	switch j.lock {
	case lockFree:
		if err != nil {
			e.Verdict, e.Action, e.Reason = procstate.Unknown, ActionSweep, oneLine(err.Error())+"; gateway.lock is not held"
			return e, true
		}
		r := j.runtimeRecord(rec)
		if r.keep {
			r.verdict, r.reason = procstate.Reused, fmt.Sprintf("pid %d lives (%s) but gateway.lock is not held: no gateway runs in this home", rec.PID, r.reason)
		} else {
			r.reason += "; gateway.lock is not held"
		}
		r.keep = false
		e.rule(rec, r)
		return e, true
	case lockHeld:
		if err == nil {
			if r := j.runtimeRecord(rec); r.keep {
				e.rule(rec, r)
				return e, true
			}
		}
		if holder, ok := s.lockRecord(); ok {
			if r := j.runtimeRecord(holder); r.keep {
				e.Verdict, e.Action = procstate.Alive, ActionKeep
				e.Reason = fmt.Sprintf("gateway.lock is held by live gateway pid %d; Hermes leaves this file while it runs", holder.PID)
				if err == nil {
					e.Record = &rec.Record
				}
				return e, true
			}
		}
	case lockUnknown:
		e.Verdict, e.Action, e.Reason = procstate.Unknown, ActionKeep, "gateway.lock cannot be probed"
		return e, true
	}
	if err != nil {
		return s.corrupt(e, err), true
	}
	e.rule(rec, j.runtimeRecord(rec))
	if j.lock == lockNone && e.Action == ActionKeep {
		e.Reason += "; no gateway.lock file (an older Hermes): kept, stricter than Hermes"
	}
	return e, true
}

// lockRecord reads what the holder of gateway.lock wrote into it.
func (s *Store) lockRecord() (hermesRecord, bool) {
	b, err := readBounded(s.layout.RuntimeLock())
	if err != nil {
		return hermesRecord{}, false
	}
	h, err := parseHermesRecord(b, true)
	return h, err == nil
}

// judgeRuntimeLock never plans to delete gateway.lock: deleting it could
// race with a gateway opening it, a lock nobody holds is harmless, and its
// presence is what tells a current Hermes home from an older one.
func (s *Store) judgeRuntimeLock(j *judge) (judged, bool) {
	path := s.layout.RuntimeLock()
	e, ok := s.read(path, KindRuntimeLock)
	if !ok {
		j.lock = lockNone
		return e, false
	}
	j.lock = lockUnknown
	if e.Action == ActionError {
		return e, true
	}
	held, err := s.RuntimeLockHeld()
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot probe the lock"
		e.Err = &FileError{Path: path, Op: "probe lock", Err: err, Hint: hintFor(err)}
		return e, true
	}
	rec, perr := parseHermesRecord(e.data, true)
	if perr == nil {
		e.rule(rec, j.runtimeRecord(rec))
	}
	if held {
		j.lock = lockHeld
		e.Action = ActionKeep
		e.Reason = "locked by a live process"
		if perr == nil {
			e.Reason += "; record: " + e.Verdict.String()
		}
		e.Verdict = procstate.Alive
		return e, true
	}
	j.lock = lockFree
	if perr != nil || !e.Verdict.Stale() {
		e.Verdict = procstate.Dead
	}
	e.Action, e.Reason = ActionOK, "lock not held; the next gateway takes it over"
	return e, true
}

// judgeScopedLock applies acquire_scoped_lock and
// _scoped_lock_record_is_stale (see scopedRecord).
func (s *Store) judgeScopedLock(j *judge, path string) (judged, bool) {
	e, ok := s.read(path, KindScopedLock)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	rec, err := parseHermesRecord(e.data, false)
	if err == nil && !rec.pidOK {
		err = &CorruptError{Reason: `no usable "pid"`}
	}
	if err != nil {
		return s.corrupt(e, err), true
	}
	rec.writer = e.stamp.Owner()
	e.rule(rec, j.scopedRecord(rec))
	return e, true
}

var runningStates = map[string]bool{"starting": true, "running": true, "draining": true, "degraded": true}

// judgeStateFile applies get_runtime_status_running_pid: a record that
// says it runs must name a live gateway of this home, or it is marked
// stopped.
func (s *Store) judgeStateFile(j *judge) (judged, bool) {
	e, ok := s.read(s.layout.StateFile(), KindState)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	var st State
	if err := parseState(e.data, &st); err != nil {
		// Hermes replaces a torn state file on its next write.
		e.Action, e.Reason = ActionOK, oneLine(err.Error())+"; the gateway rewrites it"
		return e, true
	}
	rec, err := parseHermesRecord(e.data, false)
	if err != nil || !rec.pidOK {
		e.Action, e.Reason = ActionOK, "names no process"
		return e, true
	}
	r := j.runtimeRecord(rec)
	e.rule(rec, r)
	switch {
	case r.keep:
	case runningStates[st.GatewayState]:
		e.Action = ActionMarkStopped
		e.Reason = fmt.Sprintf("says %s but owner is %s (%s)", st.GatewayState, r.verdict, r.reason)
	default:
		e.Action = ActionOK
		e.Reason = "says " + st.GatewayState
	}
	return e, true
}

// judgeMarker applies _read_live_pid_marker: a marker without a target
// pid, or older than its TTL, is unlinked; a fresh one stays until its
// target consumes it or it expires, whoever it names.
func (s *Store) judgeMarker(path string) (judged, bool) {
	e, ok := s.read(path, KindMarker)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimPrefix(e.data, bom), &fields); err != nil || fields == nil {
		if s.young(e.stamp.ModTime()) {
			e.Action, e.Reason = ActionKeep, "recently written, maybe mid-write"
			return e, true
		}
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, "not a JSON marker"
		return e, true
	}
	var target Record
	var pidOK bool
	target.PID, pidOK = pidValue(fields["target_pid"])
	var st int64
	if json.Unmarshal(fields["target_start_time"], &st) == nil {
		target.StartTime = &st
	}
	var writtenAt string
	_ = json.Unmarshal(fields["written_at"], &writtenAt)
	e.Record = &target
	switch {
	case !pidOK:
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, "names no target pid"
	case writtenAt == "":
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, "undated (no written_at): counts as expired"
	case markerStale(writtenAt, s.now()):
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, "expired (written "+strconv.Quote(writtenAt)+")"
	default:
		// Its target is not looked at: Hermes keeps a fresh marker
		// whoever it names, and only the target itself consumes it.
		e.Verdict, e.Action = procstate.Unknown, ActionKeep
		e.Reason = "fresh (written " + writtenAt + "): honoured until its target consumes it or it expires"
	}
	return e, true
}

// RuntimeLockHeld reports whether some process holds gateway.lock.
func (s *Store) RuntimeLockHeld() (bool, error) {
	f, err := platform.OpenLockFile(s.layout.RuntimeLock(), false)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := platform.LockFile(f); err != nil {
		if errors.Is(err, platform.ErrLocked) {
			return true, nil
		}
		return false, err
	}
	return false, platform.UnlockFile(f)
}

// Running reports the gateway that runs in the home, as Hermes'
// get_running_pid decides it (with our stricter rule for homes without
// gateway.lock): the gateway.pid entry when it stands for a live gateway,
// or gateway.lock's when only the lock is held. It changes nothing.
func (s *Store) Running(ctx context.Context) (Entry, bool) {
	j := s.newJudge(ctx)
	lock, lockFound := s.judgeRuntimeLock(j)
	if e, ok := s.judgePIDFile(j); ok && e.Action == ActionKeep && e.Verdict == procstate.Alive {
		return e.Entry, true
	}
	if lockFound && j.lock == lockHeld {
		return lock.Entry, true
	}
	return Entry{}, false
}
