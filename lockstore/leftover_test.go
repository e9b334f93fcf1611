package lockstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLeftoverNames(t *testing.T) {
	l := Layout{Home: "/h", LockDir: "/l"}
	lock := filepath.Base(l.ScopedLock("telegram-bot-token", "a"))
	stem := lock[:len(lock)-len(".lock")]
	tests := []struct {
		name string
		home bool // a name in the home, else in the lock dir
		want bool
	}{
		{"gateway.pid.stale", true, true},
		{"gateway.lock.stale", true, true},
		{"gateway_state.json.stale", true, true},
		{".gateway-planned-stop.json.stale", true, true},
		{".gateway-takeover.json.stale", true, true},
		{"..gateway-takeover_zz9.tmp", true, true},
		{"hermes-supervisor.state.json.stale", true, false}, // replaced through a temp, never swept
		{"gateway.pid.stale.stale", true, false},
		{".stale", true, false},
		{".gateway_state_k3j_9x2a.tmp", true, true},   // Hermes' atomic_json_write
		{".gateway_state.json.12345.tmp", true, true}, // our writeAtomic
		{".hermes-supervisor.state.json.987.tmp", true, true},
		{"..gateway-planned-stop_ab12.tmp", true, true},
		{"memories.stale", true, false},
		{".export.json.tmp", true, false},
		{".export_abc.tmp", true, false},
		{".gateway_state_.tmp", true, false},
		{".gateway_state_a/b.tmp", true, false},
		{".gateway_state.json.tmp", true, false},
		{"gateway_state_x.tmp", true, false},
		{"config.yaml", true, false},
		{".gateway_x1.tmp", true, false}, // gateway.pid is never replaced through a temp
		{".gateway_state.json.12.tmp.tmp", true, false},
		{lock + ".stale", false, true},
		{"." + stem + "_x1y2.tmp", false, true},
		{"." + lock + ".4242.tmp", false, true},
		{"notes.stale", false, false},
		{"telegram-bot-token-xyz.lock.stale", false, false},
		{".scratch.tmp", false, false},
		{lock, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := isLockDirLeftover(tt.name)
			if tt.home {
				got = isHomeLeftover(tt.name)
			}
			if got != tt.want {
				t.Fatalf("leftover = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSweepDeletesOnlyOurLeftovers: files of the user or the agent that
// merely look like leftovers survive byte for byte; ours go once old.
func TestSweepDeletesOnlyOurLeftovers(t *testing.T) {
	s, l := newStore(t)
	old := time.Now().Add(-2 * LeftoverAge)
	lock := l.ScopedLock("telegram-bot-token", "a")
	tests := []struct {
		path  string
		old   bool
		swept bool
	}{
		{filepath.Join(l.Home, "memories.stale"), true, false},
		{filepath.Join(l.Home, ".export.json.tmp"), false, false},
		{filepath.Join(l.Home, ".export.json.123.tmp"), true, false},
		{filepath.Join(l.Home, ".gateway_state_x.tmp"), true, true},
		{filepath.Join(l.Home, ".gateway_state_y.tmp"), false, false}, // a writer may be inside it
		{filepath.Join(l.Home, ".gateway_state.json.77.tmp"), true, true},
		{l.PIDFile() + ".stale", true, true},
		{filepath.Join(l.LockDir, "notes.stale"), true, false},
		{filepath.Join(l.LockDir, ".scratch.tmp"), true, false},
		{lock + ".stale", true, true},
	}
	for i, tt := range tests {
		if err := os.WriteFile(tt.path, []byte{'x', byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		if tt.old {
			if err := os.Chtimes(tt.path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Sweep(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		b, err := os.ReadFile(tt.path)
		switch {
		case tt.swept && !errors.Is(err, os.ErrNotExist):
			t.Errorf("%s: kept (%v), want it swept", filepath.Base(tt.path), err)
		case !tt.swept && (err != nil || !bytes.Equal(b, []byte{'x', byte(i)})):
			t.Errorf("%s: %q, %v; want it intact", filepath.Base(tt.path), b, err)
		}
	}
}

// TestQuarantineNeverOverwrites: each quarantine of one name keeps its
// own bytes, however many came before.
func TestQuarantineNeverOverwrites(t *testing.T) {
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	old := time.Now().Add(-time.Minute) // past Grace: not mid-write
	want := map[string][]byte{
		path + ".corrupt":   []byte("garbage one"),
		path + ".corrupt.1": []byte("garbage two"),
		path + ".corrupt.2": []byte("garbage three"),
	}
	for _, dst := range []string{path + ".corrupt", path + ".corrupt.1", path + ".corrupt.2"} {
		if err := os.WriteFile(path, want[dst], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		es, err := s.Sweep(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := byPath(es)[path]; got.Action != ActionQuarantined || !strings.HasSuffix(got.Reason, dst) {
			t.Fatalf("%s (%s), want quarantined to %s", got.Action, got.Reason, filepath.Base(dst))
		}
	}
	for p, w := range want {
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, w) {
			t.Errorf("%s = %q, %v; want %q", filepath.Base(p), b, err, w)
		}
	}
}

// TestLeftoversWaitForAStartWithTimeToSpare: the sweep before a restart
// at once leaves the home's and the bin's leftovers, which no gateway
// reads, and judges everything else; the sweep before any other start
// and the sweep command judge them too.
func TestLeftoversWaitForAStartWithTimeToSpare(t *testing.T) {
	dead := deadIdentity(t)
	// Windows sweeps without a bin (safefs.Dir.Sub): what lies in one is
	// not the sweep's there.
	bin := runtime.GOOS != "windows"
	type layout struct{ homeLeft, binLeft, lockLeft, lock, pid string }
	tests := []struct {
		name  string
		sweep func(*Store) error
		kept  func(layout) []string // the rest are swept
	}{
		{"before a restart at once",
			func(s *Store) error { _, err := s.SweepBeforeRestart(context.Background()); return err },
			func(f layout) []string { return []string{f.homeLeft, f.binLeft} }},
		{"before a start",
			func(s *Store) error { _, err := s.SweepBeforeStart(context.Background()); return err },
			func(layout) []string { return nil }},
		{"sweep",
			func(s *Store) error { _, err := s.Sweep(context.Background(), false); return err },
			func(layout) []string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			if err := os.Mkdir(l.SweepBin(), 0o700); err != nil {
				t.Fatal(err)
			}
			lock := l.ScopedLock("telegram-bot-token", "a")
			f := layout{
				homeLeft: filepath.Join(l.Home, ".gateway_state_x.tmp"),
				binLeft:  filepath.Join(l.SweepBin(), filepath.Base(lock)+".0123456789abcdef"),
				lockLeft: lock + ".stale",
				lock:     lock,
				pid:      l.PIDFile(),
			}
			writeRecord(t, f.lock, dead, l.Home)
			writeRecord(t, f.pid, dead, l.Home)
			old := time.Now().Add(-2 * LeftoverAge)
			for _, p := range []string{f.homeLeft, f.binLeft, f.lockLeft} {
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			if err := tt.sweep(s); err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, p := range tt.kept(f) {
				kept[p] = true
			}
			if !bin {
				kept[f.binLeft] = true
			}
			for _, p := range []string{f.homeLeft, f.binLeft, f.lockLeft, f.lock, f.pid} {
				_, err := os.Lstat(p)
				switch {
				case kept[p] && err != nil:
					t.Errorf("%s: %v, want it kept", p, err)
				case !kept[p] && !errors.Is(err, os.ErrNotExist):
					t.Errorf("%s: kept (%v), want it swept", p, err)
				}
			}
		})
	}
}
