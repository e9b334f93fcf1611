package lockstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestSweepClosesWhatItKeptOpen: a sweep keeps the lock-dir files it
// judges open until it acts on them (keptOpen), never more at once than
// its bound, and closes every one of them whatever became of the file:
// swept, kept for a live owner, quarantined after a second, larger read,
// replaced (never then moved aside) or locked by another holder between
// judging and acting. With
// no room left the files are read and closed, and their removal opens
// them again, with the same outcomes.
func TestSweepClosesWhatItKeptOpen(t *testing.T) {
	live := startProc(t, "block", true)
	dead := deadIdentity(t)
	for _, bound := range []int64{maxKeptOpen, 2, 0} {
		t.Run(fmt.Sprint("at most ", bound), func(t *testing.T) {
			s, l := newStore(t)
			s.open.once.Do(func() { s.open.max = bound })
			for i := range 30 {
				writeRecord(t, l.ScopedLock("telegram-bot-token", fmt.Sprint("stale", i)), dead, l.Home)
			}
			kept := l.ScopedLock("telegram-bot-token", "live")
			writeRecord(t, kept, live, l.Home)
			corrupt := l.ScopedLock("telegram-bot-token", "huge")
			if err := os.WriteFile(corrupt, []byte(strings.Repeat("x", 2*MaxRecordSize)), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(corrupt, old, old); err != nil {
				t.Fatal(err)
			}
			replaced := l.ScopedLock("telegram-bot-token", "replaced")
			locked := l.ScopedLock("telegram-bot-token", "locked")
			for _, p := range []string{replaced, locked} {
				writeRecord(t, p, dead, l.Home)
			}
			var holder *os.File
			defer func() {
				if holder != nil {
					holder.Close()
				}
			}()
			s.beforeRemove = func(p string) {
				if n := s.open.n.Load(); n > bound {
					t.Errorf("%d files kept open, more than the bound %d", n, bound)
				}
				switch p {
				case replaced:
					writeRecord(t, p+".new", dead, l.Home)
					if err := os.Rename(p+".new", p); err != nil {
						t.Fatal(err)
					}
				case locked:
					f, err := os.Open(p)
					if err != nil {
						t.Fatal(err)
					}
					holder = f
					if err := safefs.LockFile(f); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.beforeMove = func(p string) {
				if p == replaced {
					// Its name was out of the lock dir for a moment,
					// free for a second gateway to claim.
					t.Errorf("%s moved aside though another file had taken its name", filepath.Base(p))
				}
			}
			es, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]Action{kept: ActionKeep, corrupt: ActionQuarantined, replaced: ActionKeep, locked: ActionKeep}
			swept := 0
			for _, e := range es {
				if w, ok := want[e.Path]; ok && e.Action != w {
					t.Errorf("%s: %s (%s), want %s", filepath.Base(e.Path), e.Action, e.Reason, w)
				}
				if e.Action == ActionSwept {
					swept++
				}
			}
			if swept != 30 {
				t.Errorf("%d files swept, want 30", swept)
			}
			if n := s.open.n.Load(); n != 0 {
				t.Errorf("%d files still counted as kept open", n)
			}
			holder.Close()
			holder = nil
			if open := openFilesUnder(t, filepath.Dir(l.LockDir)); len(open) > 0 {
				t.Errorf("still open after the sweep: %v", open)
			}
		})
	}
}
