package lockstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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
	// ActionQuarantined: corrupt, and moved aside to <name>.corrupt.
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

// Grace is how young a corrupt or temporary file may be and still be left
// alone: a gateway may be between its O_EXCL create and its write.
const Grace = 10 * time.Second

// Store judges, sweeps and releases the files of one Layout.
type Store struct {
	layout Layout
	prober *procstate.Prober
	log    *zap.Logger
	now    func() time.Time
	// beforeRemove, set only by tests, runs between judging a file and
	// renaming it: the window in which a gateway may claim it.
	beforeRemove func(path string)
}

// New returns a Store over l.
func New(l Layout, p *procstate.Prober, log *zap.Logger, now func() time.Time) *Store {
	return &Store{layout: l, prober: p, log: log, now: now}
}

// Layout returns the files the store works on.
func (s *Store) Layout() Layout { return s.layout }

// judged is an Entry plus what a sweep needs to act safely.
type judged struct {
	Entry
	data  []byte
	stamp platform.FileStamp // the version judged, to see if it was replaced
}

// judge caches verdicts so that many files naming one process cost one look.
type judge struct {
	s     *Store
	ctx   context.Context
	mu    sync.Mutex
	cache map[string]procstate.Observation
}

func (j *judge) of(r Record) procstate.Observation {
	key := fmt.Sprint(r.PID, r.StartTime != nil, derefOr(r.StartTime), strings.Join(r.Argv, "\x00"))
	j.mu.Lock()
	o, ok := j.cache[key]
	j.mu.Unlock()
	if ok {
		return o
	}
	// Two workers may judge one identity at once; both get the same answer.
	o = j.s.prober.Judge(j.ctx, r.Identity(), IsGatewayArgv)
	j.mu.Lock()
	j.cache[key] = o
	j.mu.Unlock()
	return o
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

func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
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
	j := &judge{s: s, ctx: ctx, cache: map[string]procstate.Observation{}}
	var out []judged
	var errs []error
	add := func(e judged, ok bool) {
		if ok {
			out = append(out, e)
		}
	}
	l := s.layout
	add(s.judgeRecordFile(j, l.PIDFile(), KindPIDFile))
	add(s.judgeRuntimeLock(j))
	add(s.judgeStateFile(j))
	add(s.judgeMarker(j, l.PlannedStopMarker()))
	add(s.judgeMarker(j, l.TakeoverMarker()))
	homeLeft, err := s.leftovers(l.Home, func(n string) bool {
		return strings.HasSuffix(n, ".stale") || (strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp"))
	})
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
			lockFiles[i], found[i] = s.judgeRecordFile(j, p, KindScopedLock)
		case strings.HasSuffix(n, ".lock.stale") || (strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp")):
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

// corrupt decides between keeping a maybe-mid-write file and moving it aside.
func (s *Store) corrupt(e judged, err error) judged {
	e.Verdict = procstate.Unknown
	if s.young(e.stamp.ModTime()) {
		e.Action, e.Reason = ActionKeep, "recently written, maybe mid-write: "+oneLine(err.Error())
		return e
	}
	e.Action, e.Reason = ActionQuarantine, oneLine(err.Error())
	return e
}

func (s *Store) judgeRecordFile(j *judge, path string, kind Kind) (judged, bool) {
	e, ok := s.read(path, kind)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	rec, err := ParseRecord(e.data)
	if err != nil {
		return s.corrupt(e, err), true
	}
	e.Record = &rec
	obs := j.of(rec)
	e.Verdict, e.Reason = obs.Verdict, obs.Reason
	if obs.Verdict.Stale() {
		e.Action = ActionSweep
	} else {
		e.Action = ActionKeep
	}
	return e, true
}

// judgeRuntimeLock never plans to delete gateway.lock: deleting it could
// race with a gateway opening it, and a lock nobody holds is harmless.
func (s *Store) judgeRuntimeLock(j *judge) (judged, bool) {
	path := s.layout.RuntimeLock()
	e, ok := s.read(path, KindRuntimeLock)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	held, err := s.RuntimeLockHeld()
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot probe the lock"
		e.Err = &FileError{Path: path, Op: "probe lock", Err: err, Hint: hintFor(err)}
		return e, true
	}
	rec, perr := ParseRecord(e.data)
	if perr == nil {
		e.Record = &rec
		obs := j.of(rec)
		e.Verdict, e.Reason = obs.Verdict, obs.Reason
	}
	if held {
		e.Action = ActionKeep
		e.Reason = "locked by a live process"
		if perr == nil {
			e.Reason += "; record: " + e.Verdict.String()
		}
		if perr != nil || e.Verdict.Stale() {
			e.Verdict = procstate.Alive
		}
		return e, true
	}
	if perr != nil {
		e.Verdict = procstate.Dead
	}
	e.Action, e.Reason = ActionOK, "lock not held; the next gateway takes it over"
	return e, true
}

var runningStates = map[string]bool{"starting": true, "running": true, "draining": true, "degraded": true}

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
	if st.PID <= 0 {
		e.Action, e.Reason = ActionOK, "names no process"
		return e, true
	}
	rec := st.Record
	e.Record = &rec
	obs := j.of(rec)
	e.Verdict, e.Reason = obs.Verdict, obs.Reason
	switch {
	case !obs.Verdict.Stale():
		e.Action = ActionKeep
	case runningStates[st.GatewayState]:
		e.Action = ActionMarkStopped
		e.Reason = fmt.Sprintf("says %s but owner is %s (%s)", st.GatewayState, obs.Verdict, obs.Reason)
	default:
		e.Action = ActionOK
		e.Reason = "says " + st.GatewayState
	}
	return e, true
}

// marker covers both markers: each names a target by pid and start time.
type marker struct {
	TargetPID       int    `json:"target_pid"`
	TargetStartTime *int64 `json:"target_start_time"`
	WrittenAt       string `json:"written_at"`
}

func (s *Store) judgeMarker(j *judge, path string) (judged, bool) {
	e, ok := s.read(path, KindMarker)
	if !ok || e.Action == ActionError {
		return e, ok
	}
	var m marker
	if err := parseMarker(e.data, &m); err != nil {
		if s.young(e.stamp.ModTime()) {
			e.Action, e.Reason = ActionKeep, "recently written, maybe mid-write"
			return e, true
		}
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, oneLine(err.Error())
		return e, true
	}
	rec := Record{PID: m.TargetPID, StartTime: m.TargetStartTime}
	e.Record = &rec
	if !markerFresh(m.WrittenAt, s.now()) {
		e.Verdict, e.Action, e.Reason = procstate.Dead, ActionSweep, "expired (written "+m.WrittenAt+")"
		return e, true
	}
	// A marker targets a process by identity only; any live process with
	// that identity may still consume it.
	obs := s.prober.Judge(j.ctx, rec.Identity(), nil)
	e.Verdict, e.Reason = obs.Verdict, obs.Reason
	if obs.Verdict.Stale() {
		e.Action = ActionSweep
	} else {
		e.Action = ActionKeep
	}
	return e, true
}

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
	if s.young(fi.ModTime()) {
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
	errs := []error{err}
	if !dryRun {
		// Each file's rename, re-check and unlink touch that file alone.
		parallel(len(js), func(i int) { s.act(ctx, &js[i]) })
	}
	for i := range js {
		e := &js[i]
		if !dryRun && e.Err != nil && e.Action == ActionError {
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
		dst := e.Path + ".corrupt"
		if err := os.Rename(e.Path, dst); err != nil {
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
	if err == nil && !bytes.Equal(now, e.data) {
		if rec, perr := ParseRecord(now); perr == nil && !s.prober.Judge(ctx, rec.Identity(), IsGatewayArgv).Verdict.Stale() {
			_ = os.Link(stale, e.Path) // fails harmlessly if a newer file took the name
			_ = os.Remove(stale)
			e.Record, e.Action, e.Reason = &rec, ActionKeep, "claimed by a live gateway during the sweep"
			e.Verdict = procstate.Alive
		}
	}
}

func (s *Store) fail(e *judged, op string, err error) {
	e.Action = ActionError
	e.Err = &FileError{Path: e.Path, Op: op, Err: err, Hint: hintFor(err)}
}

// owns reports whether rec names owner: same pid, and the same start time
// when both are known.
func owns(rec Record, owner procstate.Identity) bool {
	if rec.PID != owner.PID {
		return false
	}
	return rec.StartTime == nil || owner.StartTime == nil || *rec.StartTime == *owner.StartTime
}

// ownedFiles lists the pid file and scoped locks whose records name owner.
func (s *Store) ownedFiles(owner procstate.Identity) ([]Entry, error) {
	paths := []string{s.layout.PIDFile()}
	names, err := s.lockDirNames()
	for _, n := range names {
		if strings.HasSuffix(n, ".lock") {
			paths = append(paths, filepath.Join(s.layout.LockDir, n))
		}
	}
	var out []Entry
	for i, p := range paths {
		rec, rerr := ReadRecord(p)
		if rerr != nil || !owns(rec, owner) {
			continue
		}
		kind := KindScopedLock
		if i == 0 {
			kind = KindPIDFile
		}
		out = append(out, Entry{Path: p, Kind: kind, Record: &rec})
	}
	return out, err
}

// Release removes the pid file and scoped locks naming owner after owner
// has exited; it never touches other records.
func (s *Store) Release(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	es, err := s.ownedFiles(owner)
	errs := []error{err}
	for i := range es {
		e := &es[i]
		e.Verdict = procstate.Dead
		if rerr := os.Remove(e.Path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			e.Action, e.Err = ActionError, &FileError{Path: e.Path, Op: "release", Err: rerr, Hint: hintFor(rerr)}
			e.Error = e.Err.Error()
			errs = append(errs, e.Err)
		} else {
			e.Action, e.Reason = ActionSwept, "released: its gateway exited"
		}
		s.logEntry(*e)
	}
	return es, errors.Join(errs...)
}

// Owned lists the pid file and scoped locks whose records name owner.
func (s *Store) Owned(_ context.Context, owner procstate.Identity) ([]Entry, error) {
	es, err := s.ownedFiles(owner)
	for i := range es {
		es[i].Verdict, es[i].Action, es[i].Reason = procstate.Alive, ActionKeep, "held by the supervised gateway"
	}
	return es, err
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
