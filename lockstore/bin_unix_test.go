//go:build unix

package lockstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/sweepbin"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestSweepAddsNoNameToTheLockDir: a stale lock goes out through the bin,
// so a file already called <name>.stale, which a rename beside it would
// replace, keeps its bytes; the bin is private and empty afterwards.
func TestSweepAddsNoNameToTheLockDir(t *testing.T) {
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	sentinel := []byte("not the sweep's to replace\n")
	if err := os.WriteFile(path+".stale", sentinel, 0o600); err != nil {
		t.Fatal(err)
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(es)[path]; got.Action != ActionSwept {
		t.Fatalf("the stale lock: %+v, want swept", got)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale lock is still there: %v", err)
	}
	if b, err := os.ReadFile(path + ".stale"); err != nil || !bytes.Equal(b, sentinel) {
		t.Fatalf("<name>.stale = %q, %v; want it intact", b, err)
	}
	fi, err := os.Lstat(l.SweepBin())
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the bin: %v, %v; want a directory of mode 0700", fi, err)
	}
	if des, err := os.ReadDir(l.SweepBin()); err != nil || len(des) != 0 {
		t.Fatalf("the bin holds %v (%v); want it empty", des, err)
	}
}

// TestSweepPutsAClaimBackFromTheBin: a gateway rewrites the stale lock in
// place, as a claim, after it was judged and before it is moved: the
// file moved into the bin is no longer the one judged, so it is read
// there, found to be a live gateway's, and linked back under its name.
func TestSweepPutsAClaimBackFromTheBin(t *testing.T) {
	live := startProc(t, "block", true)
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	var claim []byte
	s.beforeRemove = func(p string) {
		if p != path {
			return
		}
		tmp := filepath.Join(testdir.New(t), "claim")
		claim = writeRecord(t, tmp, live, l.Home)
		// In place: the inode stays the one judged, its bytes do not.
		if err := os.WriteFile(path, claim, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(es)[path]; got.Action != ActionKeep || !strings.Contains(got.Reason, "claimed") {
		t.Fatalf("the claimed lock: %+v, want kept as claimed", got)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, claim) {
		t.Fatalf("the lock = %q, %v; want the claim back", b, err)
	}
	if des, err := os.ReadDir(l.SweepBin()); err != nil || len(des) != 0 {
		t.Fatalf("the bin holds %v (%v); want it empty", des, err)
	}
}

// TestSweepRefusesAnUnsafeBin: a bin that is a link, that others may
// enter, or that another user owns is not used. The sweep renames aside
// beside the lock instead, and nothing behind the bin is touched. That
// holds too when a Hold kept a good bin open and it turned unsafe before
// the next Hold: its name, mode and owner are checked again then.
func TestSweepRefusesAnUnsafeBin(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	tests := unsafeDirs
	for _, tt := range tests {
		for _, kept := range []bool{false, true} {
			name := tt.name
			if kept {
				name += ", after a Hold kept the bin"
			}
			t.Run(name, func(t *testing.T) {
				s, l := newStore(t)
				sweep := func() ([]Entry, error) { return s.Sweep(context.Background(), false) }
				if kept {
					// Sweep under a Hold, which keeps the good bin it
					// made open; the next Hold checks it again.
					s.Hold()()
					if _, err := os.Stat(l.SweepBin()); err != nil {
						t.Fatalf("the Hold made no bin: %v", err)
					}
					sweep = func() ([]Entry, error) {
						defer s.Hold()()
						return s.Sweep(context.Background(), false)
					}
				}
				path := l.ScopedLock("telegram-bot-token", "a")
				writeRecord(t, path, deadIdentity(t), l.Home)
				inside := tt.make(t, l.SweepBin())
				var bait string
				if inside != "" {
					// A leftover of the bin's shape, old enough to sweep:
					// refused, the bin's files are not judged at all.
					bait = filepath.Join(inside, filepath.Base(path)+".0123456789abcdef")
					if err := os.WriteFile(bait, []byte("bait"), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Chtimes(bait, old, old); err != nil {
						t.Fatal(err)
					}
				}
				es, err := sweep()
				if err != nil {
					t.Fatal(err)
				}
				if got := byPath(es)[path]; got.Action != ActionSwept {
					t.Fatalf("the stale lock: %+v, want swept beside itself", got)
				}
				if _, err := os.Lstat(path + ".stale"); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf(".stale left behind: %v", err)
				}
				if bait != "" {
					if b, err := os.ReadFile(bait); err != nil || string(b) != "bait" {
						t.Fatalf("the file in the refused bin = %q, %v; want it intact", b, err)
					}
				}
			})
		}
	}
}

// TestAKeptBinRemovedIsMadeAgain: a bin a Hold kept open and someone
// then removed is not renamed into (the directory is gone: every rename
// would fail). The next Hold makes a new one, and the sweep goes through it.
func TestAKeptBinRemovedIsMadeAgain(t *testing.T) {
	s, l := newStore(t)
	s.Hold()()
	if err := os.Remove(l.SweepBin()); err != nil {
		t.Fatalf("remove the kept bin: %v", err)
	}
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	sentinel := []byte("not the sweep's to replace\n")
	if err := os.WriteFile(path+".stale", sentinel, 0o600); err != nil {
		t.Fatal(err)
	}
	done := s.Hold()
	es, err := s.Sweep(context.Background(), false)
	done()
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(es)[path]; got.Action != ActionSwept {
		t.Fatalf("the stale lock: %+v, want swept", got)
	}
	// Through the bin, not beside the lock: <name>.stale is untouched.
	if b, err := os.ReadFile(path + ".stale"); err != nil || !bytes.Equal(b, sentinel) {
		t.Fatalf("<name>.stale = %q, %v; want it intact", b, err)
	}
	if des, err := os.ReadDir(l.SweepBin()); err != nil || len(des) != 0 {
		t.Fatalf("the bin holds %v (%v); want a new, empty one", des, err)
	}
}

// TestSweepBinLeftovers: files a killed sweep left in the bin are removed
// once they are old enough that no sweep can still be between its rename
// and its unlink, unless a process holds one locked; names of another
// shape are not the sweep's.
func TestSweepBinLeftovers(t *testing.T) {
	s, l := newStore(t)
	if err := os.Mkdir(l.SweepBin(), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * LeftoverAge)
	lock := filepath.Base(l.ScopedLock("telegram-bot-token", "a"))
	tests := []struct {
		name  string
		old   bool
		held  bool
		swept bool
	}{
		{lock + ".0123456789abcdef", true, false, true},
		{lock + ".fedcba9876543210", false, false, false},
		{lock + ".00000000000000aa", true, true, false},
		{lock + ".stale", true, false, false},
		{"notes.txt", true, false, false},
	}
	for _, tt := range tests {
		p := filepath.Join(l.SweepBin(), tt.name)
		if err := os.WriteFile(p, []byte(tt.name), 0o600); err != nil {
			t.Fatal(err)
		}
		if tt.old {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		if tt.held {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		p := filepath.Join(l.SweepBin(), tt.name)
		_, err := os.Lstat(p)
		if gone := errors.Is(err, os.ErrNotExist); gone != tt.swept {
			t.Errorf("%s: gone %v (%+v), want %v", tt.name, gone, byPath(es)[p], tt.swept)
		}
	}
}

// TestDryRunMakesNoBin: only a sweep that acts makes the bin.
func TestDryRunMakesNoBin(t *testing.T) {
	s, l := newStore(t)
	writeRecord(t, l.ScopedLock("telegram-bot-token", "a"), deadIdentity(t), l.Home)
	if _, err := s.Sweep(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(l.SweepBin()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the bin after a dry run: %v; want none", err)
	}
}

// TestSweepManyBatches sweeps a lock dir of several batches: every file
// is judged exactly once, every stale one goes, every live one stays, and
// the bin ends empty. With every bound on the workers, files are never
// judged or acted on on more goroutines at once than the bound.
func TestSweepManyBatches(t *testing.T) {
	live := startProc(t, "block", true)
	dead := deadIdentity(t)
	for _, w := range []int{0, 1, 2, 3} {
		t.Run("workers="+strconv.Itoa(w), func(t *testing.T) {
			s, l := newStore(t)
			s.WithWorkers(w)
			acts, busy := s.workers(), s.workers()
			var inAct, mostAct, in, most atomic.Int32
			count := func(n *atomic.Int32, m *atomic.Int32) func() {
				c := n.Add(1)
				for old := m.Load(); c > old && !m.CompareAndSwap(old, c); old = m.Load() {
				}
				return func() { n.Add(-1) }
			}
			s.beforeJudge = func(string) {
				done := count(&in, &most)
				runtime.Gosched() // room for another item to come in, were it allowed
				done()
			}
			s.beforeRemove = func(string) {
				doneAct, done := count(&inAct, &mostAct), count(&in, &most)
				runtime.Gosched()
				done()
				doneAct()
			}
			sweepManyBatches(t, s, l, live, dead, sweepSorted)
			if m := mostAct.Load(); m > int32(acts) {
				t.Errorf("%d acts at once with %d workers; %d allowed", m, w, acts)
			}
			if m := most.Load(); m > int32(busy) {
				t.Errorf("%d files judged or acted on at once with %d workers; %d allowed", m, w, busy)
			}
		})
	}
}

// sweepSorted is Sweep, for sweepManyBatches.
func sweepSorted(_ *testing.T, s *Store) ([]Entry, error) {
	return s.Sweep(context.Background(), false)
}

// TestSweepEachManyBatches is TestSweepManyBatches through SweepEach: the
// same verdicts and actions, the home's files handed over first, and the
// lock dir's in batches of at most judgeBatch, each handed over once it is
// acted on (its stale files already gone).
func TestSweepEachManyBatches(t *testing.T) {
	live := startProc(t, "block", true)
	dead := deadIdentity(t)
	s, l := newStore(t)
	writeRecord(t, l.PIDFile(), dead, l.Home)
	sweepManyBatches(t, s, l, live, dead, func(t *testing.T, s *Store) ([]Entry, error) {
		var all []Entry
		batches := 0
		_, err := s.SweepEach(context.Background(), false, func(es []Entry) {
			batches++
			for _, e := range es {
				lock := e.Kind == KindScopedLock
				if batches == 1 && lock || batches > 1 && !lock {
					t.Errorf("batch %d hands over %s (%s); want the home's files alone first, then the lock dir's", batches, e.Path, e.Kind)
				}
				if e.Action == ActionSwept {
					if _, err := os.Lstat(e.Path); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s handed over as swept while still on disk (%v)", e.Path, err)
					}
				}
			}
			if len(es) > judgeBatch {
				t.Errorf("batch %d holds %d entries; want at most %d", batches, len(es), judgeBatch)
			}
			all = append(all, es...)
		})
		if want := 1 + 3; batches != want {
			t.Errorf("%d batches handed over; want %d (the home, then 2.5 batches of the lock dir)", batches, want)
		}
		return all, err
	})
}

func sweepManyBatches(t *testing.T, s *Store, l Layout, live, dead procstate.Identity, sweepFn func(*testing.T, *Store) ([]Entry, error)) {
	t.Helper()
	n := 2*judgeBatch + judgeBatch/2
	want := map[string]bool{} // path: kept
	// A few stale files in every batch are claimed by the live gateway
	// between their judgement and their move, on whichever goroutine
	// acts on them (the judge's too, when it helps): each must be kept,
	// with the claim's bytes.
	claimed := map[string]bool{}
	for i := range n {
		id := dead
		if i%3 == 0 {
			id = live
		}
		rec := NewRecord(id, l.Home)
		rec.Scope = "telegram-bot-token"
		token := "token-" + strconv.Itoa(i)
		rec.IdentityHash = IdentityHash(token)
		p := l.ScopedLock(rec.Scope, token)
		if err := WriteExclusive(p, rec); err != nil {
			t.Fatal(err)
		}
		want[p] = i%3 == 0
		if i%303 == 1 {
			claimed[p], want[p] = true, true
		}
	}
	counted := s.beforeRemove
	s.beforeRemove = func(p string) {
		if counted != nil {
			counted(p)
		}
		if claimed[p] {
			// Not t.Fatal: this may run on a goroutine of the sweep's.
			rec := NewRecord(live, l.Home)
			if err := WriteExclusive(p+".new", rec); err != nil {
				t.Error(err)
			} else if err := os.Rename(p+".new", p); err != nil {
				t.Error(err)
			}
		}
	}
	es, err := sweepFn(t, s)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range es {
		if e.Kind != KindScopedLock {
			continue
		}
		if seen[e.Path] {
			t.Fatalf("%s judged twice", e.Path)
		}
		seen[e.Path] = true
		kept, ok := want[e.Path]
		switch {
		case !ok:
			t.Fatalf("an entry for a file never written: %+v", e)
		case kept && e.Action != ActionKeep:
			t.Errorf("%s: %s (%s), want keep", e.Path, e.Action, e.Reason)
		case !kept && e.Action != ActionSwept:
			t.Errorf("%s: %s (%s), want swept", e.Path, e.Action, e.Reason)
		}
		if _, err := os.Lstat(e.Path); errors.Is(err, os.ErrNotExist) == kept {
			t.Errorf("%s: on disk %v, want kept %v", e.Path, err == nil, kept)
		}
		if claimed[e.Path] {
			if rec, err := ReadRecord(e.Path); err != nil || rec.PID != live.PID {
				t.Errorf("%s: the live gateway's claim was lost: %+v, %v", e.Path, rec, err)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d files judged", len(seen), n)
	}
	if left := binHolds(t, l); len(left) != 0 {
		t.Fatalf("the bins hold %v; want nothing", left)
	}
}

// binHolds lists what the bin and its workers' bins hold but those bins
// themselves, each of which must be a private directory of ours.
func binHolds(t *testing.T, l Layout) []string {
	t.Helper()
	left, err := sweepbin.Files(l.SweepBin())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sweepbin.WorkerBins(l.SweepBin())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ws {
		fi, err := os.Lstat(p)
		if err != nil || !workerBinName().MatchString(filepath.Base(p)) || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
			t.Errorf("worker bin %s: %v, %v; want a name 1 to 999, mode 0700 and ours", p, fi, err)
		}
	}
	return left
}

// unsafeDirs are the directories a sweep must not move into nor list:
// each make turns at (a bin, kept or not, or nothing yet) into one and
// returns the directory a file put "in" it lands in, if any.
var unsafeDirs = []struct {
	name string
	make func(t *testing.T, at string) (inside string)
}{
	{"a link to another directory", func(t *testing.T, at string) string {
		_ = os.Remove(at)
		elsewhere := testdir.New(t)
		if err := os.Symlink(elsewhere, at); err != nil {
			t.Fatal(err)
		}
		return elsewhere
	}},
	{"a directory anyone may enter", func(t *testing.T, at string) string {
		// The bin a Hold kept, if there is one: the same directory.
		if err := os.Mkdir(at, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Chmod(at, 0o777); err != nil {
			t.Fatal(err)
		}
		return at
	}},
	{"another user's directory", func(t *testing.T, at string) string {
		if err := os.Mkdir(at, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Lchown(at, os.Geteuid()+1, os.Getegid()); err != nil {
			t.Fatalf("chown (the suite runs as root in CI): %v", err)
		}
		return at
	}},
	{"a file", func(t *testing.T, at string) string {
		_ = os.Remove(at)
		if err := os.WriteFile(at, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return ""
	}},
}
