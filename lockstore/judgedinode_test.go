package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// judgedInodeWhere are the two directories whose files a sweep, a
// quarantine and a release act on, each in its own way: the lock dir's
// token lock (through the bin) and the home's pid file (through .stale).
var judgedInodeWhere = []struct {
	name string
	path func(Layout) string
}{
	{"lock dir", func(l Layout) string { return l.ScopedLock("telegram-bot-token", "tok") }},
	{"home", func(l Layout) string { return l.PIDFile() }},
}

// claimAfterTheCheck makes s, once it has made its last check of path and
// is about to act on it, see the name taken by live's fresh record, as
// Hermes' acquire_scoped_lock takes the name of a file it cannot read:
// unlink, then an O_EXCL create. It returns the record's bytes, set once
// the swap is done.
func claimAfterTheCheck(t *testing.T, s *Store, path string, live procstate.Identity, home string) *[]byte {
	t.Helper()
	var want []byte
	s.beforeMove = func(p string) {
		if p != path || want != nil {
			return
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		want = writeRecord(t, p, live, home)
	}
	return &want
}

// assertClaimKept fails unless the live gateway's record that took path's
// name after the last check is still there, untouched and kept, and no
// copy of it, nor anything else, was left aside.
func assertClaimKept(t *testing.T, l Layout, path string, want []byte, es []Entry) {
	t.Helper()
	if want == nil {
		t.Fatal("the store never came to act on the judged file")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(want) {
		t.Fatalf("the live gateway's record, never judged, was lost: %q, %v; want %q", got, err, want)
	}
	for _, e := range es {
		if e.Path == path && e.Action != ActionKeep {
			t.Errorf("entry %s: %s (%s), want it kept", filepath.Base(e.Path), e.Action, e.Reason)
		}
	}
	for _, dir := range []string{filepath.Dir(path), l.SweepBin()} {
		names, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, n := range names {
			if full := filepath.Join(dir, n.Name()); full != path && strings.HasPrefix(n.Name(), filepath.Base(path)) {
				b, _ := os.ReadFile(full)
				t.Errorf("%s left behind, holding %q", full, b)
			}
		}
	}
}

// TestQuarantineRaceAfterTheCheck: a corrupt token lock or pid file, old
// enough to be moved aside, is replaced after the sweep's last check and
// before its move by a live gateway's fresh record. Review-2 found the
// sweep then moved that record, never judged, to <name>.corrupt, freeing
// the token for a second gateway. The sweep must move only the inode it
// judged: the claim stays under its name and nothing is quarantined.
func TestQuarantineRaceAfterTheCheck(t *testing.T) {
	live := startProc(t, "block", true)
	for _, where := range judgedInodeWhere {
		t.Run(where.name, func(t *testing.T) {
			s, l := newStore(t)
			path := where.path(l)
			writeOldGarbage(t, path)
			if e := byPath(mustScan(t, s))[path]; e.Action != ActionQuarantine {
				t.Fatalf("the corrupt file is judged %s (%s), want quarantine", e.Action, e.Reason)
			}
			want := claimAfterTheCheck(t, s, path, live, l.Home)
			es, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			assertClaimKept(t, l, path, *want, es)
		})
	}
}

// writeOldGarbage writes a file no reader can parse, an hour old: past the
// mid-write grace, so a sweep moves it aside.
func writeOldGarbage(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestQuarantineStillMovesTheJudgedFile: with no race, the corrupt file
// judged is the one moved aside, bytes kept, and nothing else is left.
func TestQuarantineStillMovesTheJudgedFile(t *testing.T) {
	for _, where := range judgedInodeWhere {
		t.Run(where.name, func(t *testing.T) {
			s, l := newStore(t)
			path := where.path(l)
			writeOldGarbage(t, path)
			es, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if e := byPath(es)[path]; e.Action != ActionQuarantined {
				t.Errorf("entry: %s (%s), want quarantined", e.Action, e.Reason)
			}
			if b, err := os.ReadFile(path + ".corrupt"); err != nil || string(b) != "\x00garbage" {
				t.Errorf(".corrupt holds %q, %v", b, err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the corrupt file is still under its name: %v", err)
			}
			if names, _ := os.ReadDir(l.SweepBin()); len(names) > 0 {
				t.Errorf("left in the bin: %v", names)
			}
			if _, err := os.Lstat(path + ".stale"); err == nil {
				t.Error(".stale left behind")
			}
		})
	}
}

// TestReleaseRaceAfterTheCheck: a record naming our exited gateway is
// replaced, after the release's last check and before its removal, by
// another live gateway's fresh record. Review-2 found the release then
// unlinked that record, never judged. Whichever way the release comes
// (Release on its own or under a Hold, as the supervisor calls it, or in
// the sweep before a start or a restart), only the inode judged may go.
func TestReleaseRaceAfterTheCheck(t *testing.T) {
	live := startProc(t, "block", true)
	for _, where := range judgedInodeWhere {
		for _, how := range []struct {
			name    string
			release func(s *Store, owner procstate.Identity) ([]Entry, error)
		}{
			{"Release", func(s *Store, owner procstate.Identity) ([]Entry, error) {
				return s.Release(context.Background(), owner)
			}},
			{"Release under a Hold", func(s *Store, owner procstate.Identity) ([]Entry, error) {
				defer s.Hold()()
				return s.Release(context.Background(), owner)
			}},
			{"SweepBeforeStart", func(s *Store, owner procstate.Identity) ([]Entry, error) {
				_, err := s.SweepBeforeStart(context.Background(), owner)
				return nil, err
			}},
			{"SweepBeforeRestart", func(s *Store, owner procstate.Identity) ([]Entry, error) {
				_, err := s.SweepBeforeRestart(context.Background(), owner)
				return nil, err
			}},
		} {
			t.Run(where.name+", "+how.name, func(t *testing.T) {
				s, l := newStore(t)
				path := where.path(l)
				owner := deadIdentity(t)
				writeRecord(t, path, owner, l.Home)
				want := claimAfterTheCheck(t, s, path, live, l.Home)
				es, err := how.release(s, owner)
				if err != nil {
					t.Fatal(err)
				}
				assertClaimKept(t, l, path, *want, es)
			})
		}
	}
}

func mustScan(t *testing.T, s *Store) []Entry {
	t.Helper()
	es, err := s.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return es
}
