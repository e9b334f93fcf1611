//go:build unix

package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/sweepbin"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// openTestBin opens l's lock dir and its bin as a sweep does.
func openTestBin(t *testing.T, s *Store) *sweepBin {
	t.Helper()
	dirs, err := s.openDirs()
	if err == nil {
		err = s.openLockDir(&dirs)
	}
	if err != nil || dirs.bin == nil {
		t.Fatalf("open the bin: %v (bin %v)", err, dirs.bin)
	}
	b := newSweepBin(dirs.bin, s.log)
	t.Cleanup(func() { b.close(); dirs.close() })
	return b
}

// TestForWorkerGivesEachGoroutineABinOfItsOwn: the first goroutine moves
// into the bin, each of the next workerBins-1 into a private directory
// of its own in it, made on first use, and the rest share the bin.
func TestForWorkerGivesEachGoroutineABinOfItsOwn(t *testing.T) {
	s, l := newStore(t)
	b := openTestBin(t, s)
	if got := b.forWorker(0); got != b {
		t.Fatalf("worker 0: %+v, want the bin itself", got)
	}
	seen := map[*sweepBin]bool{b: true}
	for k := 1; k < workerBins; k++ {
		w := b.forWorker(k)
		if seen[w] {
			t.Fatalf("worker %d shares a bin", k)
		}
		seen[w] = true
		if w.tag != b.tag || w.rel != filepath.Join(binName, strconv.Itoa(k)) {
			t.Errorf("worker %d: tag %v, at %q; want the sweep's tag %v, at %s/%d", k, w.tag, w.rel, b.tag, binName, k)
		}
		if again := b.forWorker(k); again != w {
			t.Errorf("worker %d: asked again, another bin", k)
		}
		fi, err := os.Lstat(filepath.Join(l.SweepBin(), strconv.Itoa(k)))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("worker %d's bin: %v, %v; want a directory of mode 0700", k, fi, err)
		}
	}
	for _, k := range []int{workerBins, workerBins + 1, 64} {
		if got := b.forWorker(k); got != b {
			t.Errorf("worker %d: its own bin; want the bin itself", k)
		}
	}
	if _, err := os.Lstat(filepath.Join(l.SweepBin(), strconv.Itoa(workerBins))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bin was made for worker %d: %v", workerBins, err)
	}
	var none *sweepBin // no bin (Windows, an unsafe bin): none for any worker
	if none.forWorker(1) != nil {
		t.Error("no bin, yet a worker's bin")
	}
}

// TestWorkerBinsAreOnlyOurOwnDirectories: a worker's bin that is a link,
// that others may enter, that another user owns, or that is a file is
// never moved into nor swept: its goroutine moves into the bin itself,
// a full sweep still removes every stale lock, and an old file of the
// bin's shape behind it is left alone.
func TestWorkerBinsAreOnlyOurOwnDirectories(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	tests := unsafeDirs
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			if err := os.Mkdir(l.SweepBin(), 0o700); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(l.SweepBin(), "1")
			inside := tt.make(t, at)
			var bait string
			if inside != "" {
				bait = filepath.Join(inside, "telegram-bot-token-0123456789abcdef.lock.0123456789abcdef")
				if err := os.WriteFile(bait, []byte("bait"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(bait, old, old); err != nil {
					t.Fatal(err)
				}
			}
			before, err := os.Lstat(at)
			if err != nil {
				t.Fatal(err)
			}
			b := openTestBin(t, s)
			if got := b.forWorker(1); got != b {
				t.Fatalf("worker 1 got %q; want the bin itself", got.rel)
			}

			es, n := sweepOnFourWorkers(t, s, l, deadIdentity(t))
			swept := 0
			for _, e := range es {
				if e.Kind == KindScopedLock && e.Action == ActionSwept {
					swept++
				}
				if e.Path == bait || filepath.Dir(e.Path) == at {
					t.Errorf("judged behind the refused bin: %+v", e)
				}
			}
			if swept != n {
				t.Errorf("%d of %d stale locks swept", swept, n)
			}
			if bait != "" {
				if got, err := os.ReadFile(bait); err != nil || string(got) != "bait" {
					t.Errorf("the file behind the refused bin = %q, %v; want it intact", got, err)
				}
			}
			after, err := os.Lstat(at)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("the refused bin was changed: %v, %v; was %v", after, err, before)
			}
		})
	}
}

// TestWorkerBinLeftoversAreJudgedByAge: what a killed sweep left in a
// worker's bin is judged as the bin's own leftovers are: an old file of
// the bin's shape goes, a recent one (another sweep's, between its rename
// and its unlink) stays, and a name of another shape is not ours.
func TestWorkerBinLeftoversAreJudgedByAge(t *testing.T) {
	s, l := newStore(t)
	wbin := filepath.Join(l.SweepBin(), "3")
	if err := os.MkdirAll(wbin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.SweepBin(), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, age time.Duration) string {
		p := filepath.Join(wbin, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldOne := write("telegram-bot-token-0123456789abcdef.lock.0123456789abcdef", time.Hour)
	recent := write("telegram-bot-token-fedcba9876543210.lock.0123456789abcdef", 0)
	other := write("notes.txt", time.Hour)
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(es)
	if e := got[oldOne]; e.Action != ActionSwept {
		t.Errorf("the old leftover: %+v, want swept", e)
	}
	if _, err := os.Lstat(oldOne); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old leftover is still there: %v", err)
	}
	if e := got[recent]; e.Action != ActionKeep {
		t.Errorf("the recent leftover: %+v, want kept", e)
	}
	if _, ok := got[other]; ok {
		t.Errorf("a name not of the bin's shape was judged: %+v", got[other])
	}
	for _, p := range []string{recent, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
}

// TestWorkerBinsAreMadeOnlyToMoveAFile: a big sweep that moves nothing,
// every lock a live gateway's, makes no worker's bin.
func TestWorkerBinsAreMadeOnlyToMoveAFile(t *testing.T) {
	live := startProc(t, "block", true)
	s, l := newStore(t)
	es, _ := sweepOnFourWorkers(t, s, l, live)
	for _, e := range es {
		if e.Action != ActionKeep {
			t.Fatalf("%s: %s (%s), want kept", e.Path, e.Action, e.Reason)
		}
	}
	if ws, err := sweepbin.WorkerBins(l.SweepBin()); err != nil && !errors.Is(err, os.ErrNotExist) || len(ws) > 0 {
		t.Errorf("worker bins %v (%v) made by a sweep that moved nothing", ws, err)
	}
}

// sweepOnFourWorkers writes n token locks naming id, enough for four
// goroutines, and sweeps them on four.
func sweepOnFourWorkers(t *testing.T, s *Store, l Layout, id procstate.Identity) (_ []Entry, n int) {
	t.Helper()
	s.WithWorkers(4)
	n = 4 * 2 * fileItems
	for i := range n {
		writeRecord(t, l.ScopedLock("telegram-bot-token", strconv.Itoa(i)), id, l.Home)
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	return es, n
}

// TestSweepTagIsDrawnOnceOnFirstMove: a sweep that moves nothing draws no
// tag (the draw was on every restart's path), and the goroutines of one
// that does all move under the one tag, drawn by whichever moves first.
func TestSweepTagIsDrawnOnceOnFirstMove(t *testing.T) {
	s, _ := newStore(t)
	b := openTestBin(t, s)
	if b.tag.hex != "" {
		t.Fatalf("tag %q drawn before any file was moved", b.tag.hex)
	}
	names := make(chan string, workerBins)
	var wg sync.WaitGroup
	for k := range workerBins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, name := b.forWorker(k).aside(nil, "x.lock")
			names <- name
		}()
	}
	wg.Wait()
	close(names)
	first := ""
	for n := range names {
		if first == "" {
			first = n
		}
		if n != first {
			t.Errorf("goroutines moved under two tags: %q and %q", first, n)
		}
	}
	if !regexp.MustCompile(`^x\.lock\.[0-9a-f]{16}$`).MatchString(first) {
		t.Errorf("moved as %q, want x.lock and a 16-hex-digit tag", first)
	}
	if _, other := openTestBin(t, s).aside(nil, "x.lock"); other == first {
		t.Errorf("two sweeps drew the same tag %q", other)
	}
}
