package lockstore

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// LeftoverAge is how old a temp file or half-done .stale rename must be
// before a sweep deletes it. Hermes' atomic_json_write and our writeAtomic
// write a few kilobytes, fsync and rename: a writer still inside that
// after a minute is stuck, not working. Deleting a live writer's temp makes
// its rename fail and its update vanish; keeping a dead one a minute longer
// costs nothing, so the wait is generous rather than tight.
//
// Age is read from the modification time, which a rename keeps, so a lock
// Hermes renamed to <name>.stale a moment ago counts as old at once. That
// is safe: acquire_scoped_lock renames only a lock it judged stale, and
// unlinks the tombstone right after, ignoring an error, so a sweep that
// removes it first does Hermes' own work. No writer renames anything to a
// temp's name: temps are made fresh, and a bin file's sweep holds it
// locked until it is gone. The change time would also count renames, but
// nobody can set it into the past, which every test of an old leftover
// would need.
const LeftoverAge = time.Minute

// tempSuffix matches the random part of a temp name: os.CreateTemp's
// decimal number, or Python mkstemp's letters, digits and underscores.
// It and the other patterns of this package are compiled at first use:
// compiled at init, they were a third of the demo gateway's start-up.
var tempSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_]+$`) })

// isHermesTemp reports whether n is a temp of Hermes' utils.atomic_json_write
// for base: mkstemp(prefix=".<stem>_", suffix=".tmp"), where stem is base
// without its last extension, as Python's Path.stem.
func isHermesTemp(n, base string) bool {
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	return isTemp(n, "."+stem+"_")
}

// isOurTemp reports whether n is a temp of our writeAtomic for base:
// os.CreateTemp(".<base>.*.tmp").
func isOurTemp(n, base string) bool { return isTemp(n, "."+base+".") }

func isTemp(n, prefix string) bool {
	mid, ok := strings.CutSuffix(n, ".tmp")
	if !ok {
		return false
	}
	mid, ok = strings.CutPrefix(mid, prefix)
	return ok && tempSuffix().MatchString(mid)
}

// isHomeLeftover reports whether n, a name in the home, is one of the
// leftovers a sweep may delete. The home also holds the user's and the
// agent's files, so only exact names count:
//   - <file>.stale, left when a sweep (Hermes' or ours) died between its
//     rename and its unlink, for the files a sweep removes;
//   - Hermes' atomic_json_write temps of gateway_state.json and the
//     markers;
//   - our writeAtomic temps of the files we replace atomically.
//
// Every restart's sweep asks it of each name in the home, so it matches
// against the names as constants, never building the home's paths.
func isHomeLeftover(n string) bool {
	if base, ok := strings.CutSuffix(n, ".stale"); ok {
		switch base {
		case pidFileName, runtimeLockName, stateFileName, plannedStopName, takeoverName:
			return true
		}
		return false
	}
	for _, base := range [...]string{stateFileName, plannedStopName, takeoverName} {
		if isHermesTemp(n, base) {
			return true
		}
	}
	for _, base := range [...]string{stateFileName, plannedStopName, supervisorStateName} {
		if isOurTemp(n, base) {
			return true
		}
	}
	return false
}

// lockDirLeftover matches the leftovers of a scoped lock <scope>-<16 hex>.lock
// (see Layout.ScopedLock): the lock renamed to .stale by Hermes' or our
// sweep, Hermes' atomic_json_write temp .<scope>-<hex>_<random>.tmp, and
// our writeAtomic temp .<scope>-<hex>.lock.<random>.tmp.
var lockDirLeftover = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(
		`^(?:[A-Za-z0-9_.-]+-[0-9a-f]{16}\.lock\.stale|\.[A-Za-z0-9_.-]+-[0-9a-f]{16}(?:_|\.lock\.)[A-Za-z0-9_]+\.tmp)$`)
})

// isTokenLock reports whether n, a name in the lock dir, has the shape of
// the name acquire_scoped_lock gives a scoped lock:
// <scope>-<first 16 hex digits of sha256(identity)>.lock, that is
// ^[A-Za-z0-9_.-]+-[0-9a-f]{16}\.lock$. Nothing else in the lock dir is
// judged as one: it also holds Hermes' host-gateway.lock (a bare flock
// file), host-serve.* and .token files, and, shared, other programs'
// locks. Matched by hand: every name of every listing is matched, and the
// regular expression took 0.56 µs a name, this 13 ns, of a sweep's 20 µs per file.
func isTokenLock(n string) bool {
	const tail = len("-0123456789abcdef.lock")
	scope, ok := strings.CutSuffix(n, ".lock")
	if !ok || len(scope) < tail-len(".lock")+1 || scope[len(n)-tail] != '-' {
		return false
	}
	for i := len(n) - tail + 1; i < len(scope); i++ {
		if c := scope[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	for i := 0; i < len(n)-tail; i++ {
		if c := scope[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// isLockDirLeftover reports whether n, a name in the lock dir, is one of
// the leftovers a sweep may delete.
func isLockDirLeftover(n string) bool { return lockDirLeftover().MatchString(n) }

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
	st, err := safefs.Stamp(path)
	return s.judgeLeftoverStamp(path, st, err)
}

// judgeLeftoverIn is judgeLeftover of path, a file in d, stamped through
// d; it is acted on through d too.
func (s *Store) judgeLeftoverIn(d *safefs.Dir, path string) (judged, bool) {
	st, err := d.Stamp(filepath.Base(path))
	e, ok := s.judgeLeftoverStamp(path, st, err)
	e.in = d
	return e, ok
}

func (s *Store) judgeLeftoverStamp(path string, st safefs.FileStamp, err error) (judged, bool) {
	e := judged{Entry: Entry{Path: path, Kind: KindLeftover, Verdict: procstate.Dead}}
	if errors.Is(err, os.ErrNotExist) {
		return e, false
	}
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot stat"
		e.Err = &FileError{Path: path, Op: "stat", Err: err, Hint: hintFor(err)}
		return e, true
	}
	e.stamp = st
	if s.now().Sub(st.ModTime()) < LeftoverAge {
		e.Verdict, e.Action, e.Reason = procstate.Unknown, ActionKeep, "recent; a writer may still use it"
		return e, true
	}
	e.Action, e.Reason = ActionSweep, "left over by an interrupted write or sweep"
	e.facts.held, e.facts.heldErr = fileHeld(path)
	e.set(keepHeld(e.facts, decision{verdict: e.Verdict, action: e.Action, reason: e.Reason}))
	return e, true
}
