package lockstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestKeptOpenOnEveryPath: whichever way a sweep ends or a file fares,
// every lock-dir file it kept open from judging is closed by the time it
// returns and its room in the store's bound is given back (a leak would
// leave later sweeps none, a double give-back room beyond the bound), and
// no more files are kept open at once than the bound, even by two sweeps
// of one store at once: a sweep cancelled after its first removal, over
// several batches; files released by SweepBeforeStart and
// SweepBeforeRestart; files whose read fails or that vanish between the
// listing and judging; sweeps under a Hold, which lends its directories;
// two sweeps at once; and a dry run, which keeps none.
func TestKeptOpenOnEveryPath(t *testing.T) {
	live := startProc(t, "block", true)
	dead := deadIdentity(t)
	owner := deadIdentity(t) // the gateway that has just exited
	tests := []struct {
		name  string
		bound int64
		files int // stale files, besides the few below
		// sweep runs the sweep(s); at is called at every judging and removal.
		sweep func(t *testing.T, s *Store) error
		// judge runs as a file is read for judging (beforeJudge).
		judge func(t *testing.T, p string)
		// wantKept: the sweep keeps some file open, at some point.
		wantKept bool
	}{
		{name: "cancelled after its first removal, over several batches", bound: maxKeptOpen, files: 2*judgeBatch + 100, wantKept: true,
			sweep: func(t *testing.T, s *Store) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				before := s.beforeRemove
				s.beforeRemove = func(p string) { before(p); cancel() }
				_, err := s.Sweep(ctx, false)
				return err
			}},
		{name: "released before a start", bound: maxKeptOpen, files: 10, wantKept: true, sweep: func(t *testing.T, s *Store) error {
			_, err := s.SweepBeforeStart(context.Background(), owner)
			return err
		}},
		{name: "released before a restart, at most 3 kept", bound: 3, files: 10, wantKept: true, sweep: func(t *testing.T, s *Store) error {
			_, err := s.SweepBeforeRestart(context.Background(), owner)
			return err
		}},
		{name: "reads that fail, names that vanish", bound: maxKeptOpen, files: 10, wantKept: true, sweep: sweepOnce,
			judge: func(t *testing.T, p string) {
				var err error
				switch filepath.Base(p) {
				case tokenLockName("dir"):
					if err = os.Remove(p); err == nil {
						err = os.Mkdir(p, 0o700)
					}
				case tokenLockName("fifo"):
					if err = os.Remove(p); err == nil {
						err = syscall.Mkfifo(p, 0o600)
					}
				case tokenLockName("gone"):
					err = os.Remove(p)
				}
				if err != nil {
					t.Error(err)
				}
			}},
		{name: "under a Hold, twice", bound: maxKeptOpen, files: 50, wantKept: true, sweep: func(t *testing.T, s *Store) error {
			defer s.Hold()()
			if err := sweepOnce(t, s); err != nil {
				return err
			}
			return sweepOnce(t, s)
		}},
		{name: "two at once, at most 100 kept", bound: 100, files: judgeBatch + 500, wantKept: true, sweep: func(t *testing.T, s *Store) error {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() { errs[i] = sweepOnce(t, s) })
			}
			wg.Wait()
			return errs[0]
		}},
		{name: "a dry run", bound: maxKeptOpen, files: 10, sweep: func(t *testing.T, s *Store) error {
			_, err := s.Sweep(context.Background(), true)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			s.open.once.Do(func() { s.open.max = tt.bound })
			for i := range tt.files {
				writeRecord(t, l.ScopedLock("telegram-bot-token", fmt.Sprint("stale", i)), dead, l.Home)
			}
			for i := range 5 {
				writeRecord(t, l.ScopedLock("telegram-bot-token", fmt.Sprint("released", i)), owner, l.Home)
			}
			writeRecord(t, l.ScopedLock("telegram-bot-token", "live"), live, l.Home)
			for _, n := range []string{"dir", "fifo", "gone"} {
				writeRecord(t, l.ScopedLock("telegram-bot-token", n), dead, l.Home)
			}
			var mu sync.Mutex
			most := int64(0)
			at := func() {
				n := s.open.n.Load()
				mu.Lock()
				defer mu.Unlock()
				most = max(most, n)
				if n > tt.bound || n < 0 {
					t.Errorf("%d files counted as kept open, bound %d", n, tt.bound)
				}
			}
			s.beforeJudge = func(p string) {
				at()
				if tt.judge != nil {
					tt.judge(t, p)
				}
			}
			s.beforeRemove = func(string) { at() }
			_ = tt.sweep(t, s) // the failed reads are errors; what is checked is below
			if n := s.open.n.Load(); n != 0 {
				t.Errorf("%d files still counted as kept open after the sweep", n)
			}
			if tt.wantKept != (most > 0) {
				t.Errorf("at most %d files kept open at once; want some: %v", most, tt.wantKept)
			}
			if open := openFilesUnder(t, filepath.Dir(l.LockDir)); len(open) > 0 {
				t.Errorf("still open after the sweep: %v", open)
			}
		})
	}
}

func sweepOnce(t *testing.T, s *Store) error {
	_, err := s.Sweep(context.Background(), false)
	return err
}

// tokenLockName is the base name of the token lock of token.
func tokenLockName(token string) string {
	return filepath.Base(Layout{LockDir: "/"}.ScopedLock("telegram-bot-token", token))
}

// openFilesUnder lists the files, not directories (a Hold keeps those),
// this process has open under dir.
func openFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		link := filepath.Join("/proc/self/fd", fd.Name())
		p, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		if fi, err := os.Stat(link); err == nil && !fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}
