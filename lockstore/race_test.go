package lockstore

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// raceReplacement is a file that takes a judged file's name: replace makes
// it at path and returns what reading path then gives.
type raceReplacement struct {
	name    string
	replace func(t *testing.T, path string, l Layout) []byte
	link    bool // it is a symlink, which must come back as one
}

// TestSweepRaceAfterTheHold replaces a stale file after the sweep has
// checked and locked the file it judged, just before it moves the name
// aside: what it moves is then another inode, never judged. Whatever that
// file holds (a dead owner's record, bytes that are no record, which the
// rules would quarantine, a live gateway's claim), it goes back under its
// name, untouched, and is left for the next sweep.
func TestSweepRaceAfterTheHold(t *testing.T) {
	live := startProc(t, "block", true)
	for _, where := range judgedInodeWhere {
		cases := []raceReplacement{
			{"a dead owner's record", func(t *testing.T, path string, l Layout) []byte {
				return writeRecord(t, path, deadIdentity(t), l.Home)
			}, false},
			{"bytes that are no record", func(t *testing.T, path string, _ Layout) []byte {
				b := []byte(`{"pid": 12, "start_ti`)
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				return b
			}, false},
			{"a live gateway's claim", func(t *testing.T, path string, l Layout) []byte {
				return writeRecord(t, path, live, l.Home)
			}, false},
		}
		if linkReplacement != nil { // where the OS has symlinks as POSIX does
			cases = append(cases, *linkReplacement)
		}
		for _, tt := range cases {
			t.Run(where.name+", "+tt.name, func(t *testing.T) {
				s, l := newStore(t)
				path := where.path(l)
				writeRecord(t, path, deadIdentity(t), l.Home)
				var want []byte
				s.beforeMove = func(p string) {
					if p != path {
						return
					}
					tmp := p + ".new"
					want = tt.replace(t, tmp, l)
					if err := os.Rename(tmp, p); err != nil {
						t.Fatal(err)
					}
				}
				entries, err := s.Sweep(context.Background(), false)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					t.Fatal("the sweep never came to move the stale file")
				}
				if tt.link {
					if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
						t.Fatalf("the link that replaced the judged file is %v, %v; want it back under its name", fi, err)
					}
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != string(want) {
					t.Fatalf("the file that replaced the judged one was lost: %q, %v; want %q", got, err, want)
				}
				for _, e := range entries {
					if e.Path == path && (e.Action != ActionKeep || e.Verdict != procstate.Unknown && e.Verdict != procstate.Alive) {
						t.Errorf("entry %+v, want it kept", e)
					}
				}
				if _, err := os.Stat(path + ".stale"); err == nil {
					t.Error(".stale left behind")
				}
			})
		}
	}
}

// TestSweepOfAFileGoneBeforeItsMove removes a stale file after the
// sweep's last check and just before its move, as Hermes' own clean-up or
// another sweep may: nothing is left to remove, which is no error, and
// the entry says the file was gone already.
func TestSweepOfAFileGoneBeforeItsMove(t *testing.T) {
	for _, where := range judgedInodeWhere {
		t.Run(where.name, func(t *testing.T) {
			s, l := newStore(t)
			path := where.path(l)
			writeRecord(t, path, deadIdentity(t), l.Home)
			removed := false
			s.beforeMove = func(p string) {
				if p != path {
					return
				}
				// Errorf, not Fatal: the hook may run on a sweep's goroutine.
				if err := os.Remove(p); err != nil {
					t.Errorf("remove the stale file before its move: %v", err)
					return
				}
				removed = true
			}
			entries, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if !removed {
				t.Fatal("the sweep never came to move the stale file")
			}
			found := false
			for _, e := range entries {
				if e.Path != path {
					continue
				}
				found = true
				if e.Action != ActionOK || e.Reason != "already gone" || e.Err != nil {
					t.Errorf("entry %+v, want %q with reason %q and no error", e, ActionOK, "already gone")
				}
			}
			if !found {
				t.Errorf("no entry for %s in %+v", path, entries)
			}
		})
	}
}

// TestKeepAs: a put-back takes the file's own name when free, else the
// first free name.replaced[.N], and gives up on another error.
func TestKeepAs(t *testing.T) {
	taken := map[string]bool{"a.lock": true, "a.lock.replaced": true, "a.lock.replaced.1": true}
	var tried []string
	got, err := keepAs("a.lock", func(n string) error {
		tried = append(tried, n)
		if taken[n] {
			return os.ErrExist
		}
		return nil
	})
	if err != nil || got != "a.lock.replaced.2" || len(tried) != 4 {
		t.Errorf("keepAs = %q, %v after %v; want a.lock.replaced.2", got, err, tried)
	}
	if got, err := keepAs("b", func(string) error { return os.ErrPermission }); !errors.Is(err, os.ErrPermission) || got != "b" {
		t.Errorf("keepAs with a failing move = %q, %v", got, err)
	}
}
