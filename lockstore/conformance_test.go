package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestConformance builds every layout of hermes-verdicts.md, and ours,
// with real processes, and checks the verdict and action of a dry-run
// sweep and then the action and result of a real one.
func TestConformance(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, row := range conformance.RowsHere() {
		t.Run(row.ID, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			path := row.Build(e)
			s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
			dry, err := s.Sweep(context.Background(), true)
			if err != nil {
				t.Fatalf("dry run: %v", err)
			}
			got, ok := byPath(dry)[path]
			if !ok {
				t.Fatalf("%s not judged: %+v", path, dry)
			}
			if string(got.Kind) != row.File || got.Verdict.String() != row.Verdict || string(got.Action) != row.Action {
				t.Fatalf("%s (%s): dry run says %s %s/%s (%s), want %s %s/%s",
					row.ID, row.Layout, got.Kind, got.Verdict, got.Action, got.Reason, row.File, row.Verdict, row.Action)
			}
			before := conformance.Snap(t, path)
			real, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatalf("sweep: %v", err)
			}
			want := conformance.RealAction(row.Action)
			if got := byPath(real)[path]; string(got.Action) != want {
				t.Fatalf("%s: sweep did %s (%s), want %s", row.ID, got.Action, got.Reason, want)
			}
			_, statErr := os.Stat(path)
			if exists := statErr == nil; exists != conformance.Kept(want) || (!exists && !errors.Is(statErr, os.ErrNotExist)) {
				t.Fatalf("%s: file exists=%v after %s (%v)", row.ID, exists, want, statErr)
			}
			if want == "keep" || want == "ok" {
				before.Same(t, path) // a kept file keeps its bytes and inode
			}
		})
	}
}

// TestOwnCommandIsAGateway: the command line the supervisor starts counts
// as a gateway, though Hermes would call it none.
func TestOwnCommandIsAGateway(t *testing.T) {
	e := conformance.NewEnv(t, conformance.NewBin(t))
	p := e.Sleeper("python3", "gw.py", "serve")
	rec := e.Record(p, e.Home)
	rec["argv"], rec["start_time"] = conformance.GatewayArgv, nil
	path := e.Write(e.Scoped(), rec)
	for _, tt := range []struct {
		own  []string
		want Action
	}{
		{nil, ActionSweep},
		{p.Argv, ActionKeep}, // what the supervisor started, as started
	} {
		s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now).WithGatewayCommand(tt.own)
		es, err := s.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := byPath(es)[path]; got.Action != tt.want {
			t.Errorf("own command %q: %s (%s), want %s", tt.own, got.Action, got.Reason, tt.want)
		}
	}
}

// TestConformanceTable fails when the conformance table of
// docs/reliability.md differs from the rows the suite runs, so the report
// says what the suite runs; CONFORMANCE_TABLE=update rewrites it.
func TestConformanceTable(t *testing.T) {
	const doc = "../docs/reliability.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := conformance.Table(conformance.Rows())
	header, _, _ := strings.Cut(want, "\n")
	start := strings.Index(string(b), header+"\n")
	if start < 0 {
		t.Fatalf("%s has no conformance table (a line %q)", doc, header)
	}
	end := start
	for end < len(b) && b[end] == '|' {
		end += strings.IndexByte(string(b[end:]), '\n') + 1
	}
	if got := string(b[start:end]); got != want {
		if os.Getenv("CONFORMANCE_TABLE") != "update" {
			t.Fatalf("the conformance table in %s is not what the suite runs: rerun with CONFORMANCE_TABLE=update go test -run TestConformanceTable ./lockstore", doc)
		}
		out := append(append(append([]byte{}, b[:start]...), want...), b[end:]...)
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunning: the gateway the supervisor waits for, rather than starting
// its own, is the one Hermes' get_running_pid would find.
func TestRunning(t *testing.T) {
	want := map[string]bool{"P01": true, "P11": true, "P11f": false, "P20": false, "O03": true, "O19": true, "O24": true, "P17": false,
		"R01": true, "R02": false, "R03": true, "R04": true, "R05": false, "R06": true}
	bin := conformance.NewBin(t)
	for _, row := range conformance.RowsHere() {
		running, ok := want[row.ID]
		if !ok {
			continue
		}
		t.Run(row.ID, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			row.Build(e)
			s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
			got, ok := s.Running(context.Background())
			if ok != running {
				t.Fatalf("%s (%s): running=%v (%+v), want %v", row.ID, row.Layout, ok, got, running)
			}
		})
	}
}

// TestOnlyTokenLockNames: in a lock dir shared with Hermes' host gateway
// and other programs, only names of the token-lock shape are judged;
// host-gateway.lock, held or not, and every other name are left as they
// are.
func TestOnlyTokenLockNames(t *testing.T) {
	e := conformance.NewEnv(t, conformance.NewBin(t))
	names := []string{"host-gateway.lock", "other.lock", "telegram-bot-token-0123456789ABCDEF.lock", "x-0123.lock", "host-gateway.json", "app.lock.stale"}
	snaps := map[string]conformance.Snapshot{}
	for _, n := range names {
		p := e.Write(filepath.Join(e.LockDir, n), "\x00not a record")
		e.Age(p, time.Hour)
	}
	e.HoldLock(filepath.Join(e.LockDir, "host-gateway.lock"))
	for _, n := range names {
		p := filepath.Join(e.LockDir, n)
		e.Age(p, time.Hour)
		snaps[p] = conformance.Snap(t, p)
	}
	s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for p, snap := range snaps {
		if got, ok := byPath(es)[p]; ok {
			t.Errorf("%s judged: %s/%s (%s)", p, got.Verdict, got.Action, got.Reason)
		}
		snap.Same(t, p)
	}
}
