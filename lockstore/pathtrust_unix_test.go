//go:build unix

package lockstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// otherUID is the user the attacks run as: nobody.
const otherUID = 65534

// A root sweep must not act through a path another user can shape
// (issue 23 item 7): a link they own, or a directory on the way they may
// write. Each case plants, under the path the sweep is given, a link to a
// victim directory holding a stale lock (a record of a dead process) that
// the sweep would remove if it followed the link.
func TestSweepRefusesPathAnotherUserShapes(t *testing.T) {
	tests := []struct {
		name string
		// plant makes the path at l.LockDir or l.Home lead to victim,
		// under dir, and returns the layout the sweep is given.
		plant func(t *testing.T, dir, victim string) Layout
		// victimIsHome: the victim is a home (its gateway.pid is the
		// stale file), else a lock dir.
		victimIsHome bool
	}{
		{name: "lock dir: link in a non-sticky dir others may write", plant: func(t *testing.T, dir, victim string) Layout {
			shared := mkdir(t, dir, "shared", 0o777)
			symlink(t, victim, filepath.Join(shared, "locks"), -1)
			return Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: filepath.Join(shared, "locks")}
		}},
		{name: "lock dir: link owned by another user", plant: func(t *testing.T, dir, victim string) Layout {
			symlink(t, victim, filepath.Join(dir, "locks"), otherUID)
			return Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: filepath.Join(dir, "locks")}
		}},
		{name: "lock dir: parent a link owned by another user", plant: func(t *testing.T, dir, victim string) Layout {
			symlink(t, filepath.Dir(victim), filepath.Join(dir, "state"), otherUID)
			return Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: filepath.Join(dir, "state", filepath.Base(victim))}
		}},
		{name: "lock dir: another user's directory on the way", plant: func(t *testing.T, dir, victim string) Layout {
			theirs := mkdir(t, dir, "theirs", 0o755)
			chown(t, theirs, otherUID)
			symlink(t, victim, filepath.Join(theirs, "locks"), -1)
			return Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: filepath.Join(theirs, "locks")}
		}},
		{name: "home: link in a non-sticky dir others may write", victimIsHome: true, plant: func(t *testing.T, dir, victim string) Layout {
			shared := mkdir(t, dir, "shared", 0o777)
			symlink(t, victim, filepath.Join(shared, "home"), -1)
			return Layout{Home: filepath.Join(shared, "home"), LockDir: mkdir(t, dir, "locks", 0o700)}
		}},
		{name: "home: link owned by another user", victimIsHome: true, plant: func(t *testing.T, dir, victim string) Layout {
			symlink(t, victim, filepath.Join(dir, "home"), otherUID)
			return Layout{Home: filepath.Join(dir, "home"), LockDir: mkdir(t, dir, "locks", 0o700)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testdir.New(t)
			// The victim: a root-only directory elsewhere.
			victimParent := mkdir(t, testdir.New(t), "private", 0o700)
			victim := mkdir(t, victimParent, "target", 0o700)
			stale := Layout{Home: victim, LockDir: victim}.ScopedLock("telegram-bot-token", "a")
			if tt.victimIsHome {
				stale = Layout{Home: victim}.PIDFile()
			}
			writeRecord(t, stale, deadIdentity(t), victim)
			l := tt.plant(t, dir, victim)
			s := New(l, prober, zaptest.NewLogger(t), time.Now)
			_, err := s.Sweep(context.Background(), false)
			if _, serr := os.Lstat(stale); serr != nil {
				t.Fatalf("the sweep removed %s behind the planted path: %v", stale, serr)
			}
			if !errors.Is(err, safefs.ErrUnsafeDir) {
				t.Errorf("sweep error = %v, want one wrapping ErrUnsafeDir", err)
			}
		})
	}
}

// TestSweepLaterSeesSwappedParent replays a swap between two sweeps of
// one store, as a running supervisor makes before every start: a
// component of the lock dir's path becomes another user's link to a
// directory holding a stale lock of the same name. The second sweep must
// refuse the path and leave the victim alone.
func TestSweepLaterSeesSwappedParent(t *testing.T) {
	s, l, state := newStateStore(t)
	if _, err := s.Sweep(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	stale := swapForVictim(t, state, l.Home)
	_, err := s.Sweep(context.Background(), false)
	if _, serr := os.Lstat(stale); serr != nil {
		t.Fatalf("the second sweep removed %s through the swapped component: %v", stale, serr)
	}
	if !errors.Is(err, safefs.ErrUnsafeDir) {
		t.Errorf("sweep error = %v, want one wrapping ErrUnsafeDir", err)
	}
}

// TestSweepFollowsOwnLink is the other side: a lock dir that is a link
// the user owns, along a path only they and root control, is swept as
// its target.
func TestSweepFollowsOwnLink(t *testing.T) {
	dir := testdir.New(t)
	target := mkdir(t, dir, "real-locks", 0o700)
	l := Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: filepath.Join(dir, "locks")}
	symlink(t, target, l.LockDir, -1)
	stale := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, stale, deadIdentity(t), l.Home)
	s := New(l, prober, zaptest.NewLogger(t), time.Now)
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if e := byPath(es)[stale]; e.Action != ActionSwept {
		t.Errorf("%s: %s (%s), want swept", stale, e.Action, e.Reason)
	}
	if _, err := os.Lstat(filepath.Join(target, filepath.Base(stale))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale lock in the link's target is still there: %v", err)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a file another user's needs root; CI runs as root")
	}
}

func mkdir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// symlink makes link point at target, owned by uid unless uid is -1.
func symlink(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		requireRoot(t)
		if err := os.Lchown(link, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	requireRoot(t)
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestHoldActsInTheJudgedDirs: the directories a Hold opened are where
// every action of the calls under it goes, even once a component of the
// path is swapped for another user's link; its end lets the next sweep
// see the swap and refuse.
func TestHoldActsInTheJudgedDirs(t *testing.T) {
	s, l, state := newStateStore(t)
	own := l.ScopedLock("telegram-bot-token", "own")
	writeRecord(t, own, deadIdentity(t), l.Home)
	done := s.Hold()
	stale := swapForVictim(t, state, l.Home)
	if _, err := s.Sweep(context.Background(), false); err != nil {
		t.Logf("sweep under the hold: %v", err)
	}
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("a sweep under the hold removed %s through the swapped component: %v", stale, err)
	}
	done()
	_, err := s.Sweep(context.Background(), false)
	if !errors.Is(err, safefs.ErrUnsafeDir) {
		t.Errorf("sweep after the hold: error = %v, want one wrapping ErrUnsafeDir", err)
	}
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("the sweep after the hold removed %s: %v", stale, err)
	}
}

// TestHoldReopensAMovedHome: the directories a Hold keeps open are taken
// again only while the paths still name them. A home moved away and
// replaced between two restarts is walked again, and the second restart's
// sweep acts in the new home, not in the one moved away.
func TestHoldReopensAMovedHome(t *testing.T) {
	dir := testdir.New(t)
	l := Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: mkdir(t, dir, "locks", 0o700)}
	s := New(l, prober, zaptest.NewLogger(t), time.Now)
	s.Hold()()
	if err := os.Rename(l.Home, l.Home+".moved"); err != nil {
		t.Fatal(err)
	}
	mkdir(t, dir, "home", 0o700)
	stale := l.PIDFile()
	writeRecord(t, stale, deadIdentity(t), l.Home)
	done := s.Hold()
	es, err := s.Sweep(context.Background(), false)
	done()
	if err != nil {
		t.Fatal(err)
	}
	if e := byPath(es)[stale]; e.Action != ActionSwept {
		t.Fatalf("%s in the new home: %s (%s), want swept", stale, e.Action, e.Reason)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale pid file in the new home is still there: %v", err)
	}
}

// newStateStore is a Store whose lock dir sits in a state directory of
// its own, which swapForVictim can swap.
func newStateStore(t *testing.T) (*Store, Layout, string) {
	t.Helper()
	requireRoot(t)
	dir := testdir.New(t)
	state := mkdir(t, dir, "state", 0o700)
	l := Layout{Home: mkdir(t, dir, "home", 0o700), LockDir: mkdir(t, state, "locks", 0o700)}
	return New(l, prober, zaptest.NewLogger(t), time.Now), l, state
}

// swapForVictim moves state away and puts in its place another user's
// link to a private directory whose locks hold a stale lock, which it
// returns: what a sweep must never remove.
func swapForVictim(t *testing.T, state, home string) string {
	t.Helper()
	victimState := mkdir(t, testdir.New(t), "private", 0o700)
	victim := mkdir(t, victimState, "locks", 0o700)
	stale := Layout{LockDir: victim}.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, stale, deadIdentity(t), home)
	if err := os.Rename(state, state+".moved"); err != nil {
		t.Fatal(err)
	}
	symlink(t, victimState, state, otherUID)
	return stale
}

// TestSweepLeavesWhatIsNotARegularFile: the lock dir is listed through
// its descriptor with the types getdents gives (safefs.Dir). A link named
// like a scoped lock, to a stale record outside the lock dir, a FIFO and
// a directory under such names are none of them a lock file: the sweep
// neither follows, blocks on, nor removes them, and still sweeps the
// stale lock beside them.
func TestSweepLeavesWhatIsNotARegularFile(t *testing.T) {
	s, l := newStore(t)
	dead := deadIdentity(t)
	stale := l.ScopedLock("telegram-bot-token", "stale")
	writeRecord(t, stale, dead, l.Home)
	outside := filepath.Join(testdir.New(t), "victim.lock")
	victim := writeRecord(t, outside, dead, l.Home)
	link := filepath.Join(l.LockDir, "telegram-bot-token-aaaaaaaaaaaaaaaa.lock")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(l.LockDir, "telegram-bot-token-bbbbbbbbbbbbbbbb.lock")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.LockDir, "telegram-bot-token-cccccccccccccccc.lock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.SweepBeforeStart(ctx); err != nil {
		t.Logf("sweep: %v", err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale lock beside them was not swept: %v", err)
	}
	for _, p := range []string{link, fifo, dir} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed or moved: %v", filepath.Base(p), err)
		}
	}
	if got, err := os.ReadFile(outside); err != nil || !bytes.Equal(got, victim) {
		t.Fatalf("the link's target outside the lock dir changed: %q, %v", got, err)
	}
}
