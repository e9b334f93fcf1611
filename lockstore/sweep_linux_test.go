package lockstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"golang.org/x/sys/unix"
)

// TestSweepDirSwappedForSymlink replays the attack of issue 13 item 4: the
// lock dir is swapped for a symlink to another directory between judging a
// stale lock and removing it. The sweep must act on the directory it
// judged, never on a file of the same name behind the symlink.
func TestSweepDirSwappedForSymlink(t *testing.T) {
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	writeRecord(t, path, deadIdentity(t), l.Home)
	elsewhere := testdir.New(t)
	victim := filepath.Join(elsewhere, filepath.Base(path))
	want := []byte("root-only bytes that are no lock record\n")
	if err := os.WriteFile(victim, want, 0o600); err != nil {
		t.Fatal(err)
	}
	moved := l.LockDir + ".moved"
	swapped := false
	s.beforeRemove = func(p string) {
		if p != path || swapped {
			return
		}
		swapped = true
		if err := os.Rename(l.LockDir, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, l.LockDir); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := s.Sweep(context.Background(), false)
	if !swapped {
		t.Fatalf("the sweep never reached the stale lock: %+v", entries)
	}
	got, err := os.ReadFile(victim)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file behind the symlink = %q, %v; want %q intact", got, err, want)
	}
	des, err := os.ReadDir(elsewhere)
	if err != nil || len(des) != 1 {
		t.Fatalf("the directory behind the symlink changed: %v %v", des, err)
	}
}

// TestSweepOnOneOrTwoGoroutines is a lock dir judged and swept on the
// caller's goroutine alone, and one big enough for two: either way the
// live gateway's and the unrelated process's records are kept, and the
// reaped pids' and the reused pid's (a live process with another start
// time) swept, each as what it is.
func TestSweepOnOneOrTwoGoroutines(t *testing.T) {
	tests := []struct {
		name string
		dead int
	}{
		{"on one goroutine", 2*fileItems - 4},
		{"on two goroutines", 2*fileItems + 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, l := newStore(t)
			s.WithWorkers(2)
			live := startProc(t, "block", true)
			other := startProc(t, "block", false)
			reused := other
			reused.StartTime = new(*other.StartTime + 1000)
			dead := make([]procstate.Identity, tt.dead)
			for i := range dead {
				dead[i] = deadIdentity(t)
			}
			want := map[string]procstate.Verdict{ // kept when Alive
				writeScoped(t, l, "telegram-bot-token", "live", live): procstate.Alive,
				writeScoped(t, l, "matrix", "other", other):           procstate.Alive,
				writeScoped(t, l, "slack", "reused", reused):          procstate.Reused,
			}
			for i, d := range dead {
				want[writeScoped(t, l, "signal-phone", fmt.Sprint("dead", i), d)] = procstate.Dead
			}
			es, err := s.Sweep(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			got := byPath(es)
			for p, verdict := range want {
				kept := verdict == procstate.Alive
				e, ok := got[p]
				switch {
				case !ok:
					t.Errorf("%s not judged", filepath.Base(p))
				case kept && (e.Action != ActionKeep || e.Verdict != verdict):
					t.Errorf("%s: %s/%s (%s), want alive and kept", filepath.Base(p), e.Verdict, e.Action, e.Reason)
				case !kept && (e.Action != ActionSwept || e.Verdict != verdict):
					t.Errorf("%s: %s/%s (%s), want %s and swept", filepath.Base(p), e.Verdict, e.Action, e.Reason, verdict)
				}
				if _, err := os.Stat(p); (err == nil) != kept {
					t.Errorf("%s: exists=%v, kept=%v", filepath.Base(p), err == nil, kept)
				}
			}
		})
	}
}

// writeScoped writes id's record as the scoped lock of scope and identity.
func writeScoped(t *testing.T, l Layout, scope, identity string, id procstate.Identity) string {
	t.Helper()
	p := l.ScopedLock(scope, identity)
	writeRecord(t, p, id, l.Home)
	return p
}

// TestSweepBeforeStartLeavesZombieState: the gateway that just exited is a
// zombie until the supervisor reaps it, after the next start. A zombie is
// dead, as Hermes counts it: its running state file is left to the
// gateway starting now, as a dead pid's is, not rewritten on the way.
func TestSweepBeforeStartLeavesZombieState(t *testing.T) {
	zombie := startProc(t, "block", true)
	if err := unix.Kill(zombie.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The helper's cleanup reaps it: until then it stays a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.PID, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	checkStateBeforeStart(t, zombie, false)
}
