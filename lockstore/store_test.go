package lockstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Children are this test binary in a helper mode, so every "gateway" and
// every "unrelated process" is a real process with a real start time.
func TestMain(m *testing.M) {
	conformance.RunHelper()
	switch os.Getenv("LOCKSTORE_HELPER") {
	case "block": // say it runs, block until stdin closes
		// Until the new program runs, its command line reads empty: the
		// parent waits for this line before it reads the identity.
		os.Stdout.WriteString("running\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "lock": // hold gateway.lock, say so, block until stdin closes
		f, err := os.OpenFile(os.Getenv("LOCKSTORE_LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = safefs.LockFile(f)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var prober = procstate.NewProber(procstate.Options{StartTolerance: -1})

// startProc starts a helper; with gateway it runs as "<test> demo-gateway",
// which IsGatewayArgv accepts. It runs until the test ends.
func startProc(t testing.TB, mode string, gateway bool, env ...string) procstate.Identity {
	t.Helper()
	id, end := startHelper(t, mode, gateway, env...)
	t.Cleanup(func() { _ = end() })
	return id
}

// startHelper starts a helper as startProc does and returns its identity,
// read once it says it runs, and end, which closes its stdin and reaps it.
func startHelper(t testing.TB, mode string, gateway bool, env ...string) (_ procstate.Identity, end func() error) {
	t.Helper()
	// Under Wine on a loaded host (CI, 2026-12-07), a helper once never
	// said it runs and the read waited 9 minutes, until the package's
	// timeout: a helper that has not said so within helperSays is killed
	// and started once more, said in the test's log.
	for try := 1; ; try++ {
		id, end, err := tryHelper(t, mode, gateway, env...)
		if err == nil {
			return id, end
		}
		if try == 2 || !errors.Is(err, errHelperSilent) {
			t.Fatal(err)
		}
		t.Logf("%v; starting another", err)
	}
}

// helperSays bounds the wait for a helper to say it runs; it takes
// milliseconds, under Wine too.
const helperSays = 30 * time.Second

var errHelperSilent = errors.New("helper did not say it runs")

// tryHelper is one try of startHelper.
func tryHelper(t testing.TB, mode string, gateway bool, env ...string) (_ procstate.Identity, end func() error, _ error) {
	t.Helper()
	args := []string{}
	if gateway {
		args = append(args, "demo-gateway")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "LOCKSTORE_HELPER="+mode), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	end = func() error { stdin.Close(); return cmd.Wait() }
	want := map[string]string{"lock": "locked\n", "block": "running\n"}[mode]
	line := make([]byte, len(want))
	read := make(chan error, 1)
	go func() { _, err := io.ReadFull(stdout, line); read <- err }()
	timer := time.NewTimer(helperSays)
	defer timer.Stop()
	select {
	case err := <-read:
		if err != nil || string(line) != want {
			_ = end()
			return procstate.Identity{}, nil, fmt.Errorf("helper %s: %q %v", mode, line, err)
		}
	case <-timer.C:
		// Not waited for: a read Windows does not end when the pipe
		// is closed would hold the test again.
		_ = cmd.Process.Kill()
		_ = end()
		return procstate.Identity{}, nil, fmt.Errorf("%w within %v (pid %d, mode %s)", errHelperSilent, helperSays, cmd.Process.Pid, mode)
	}
	id, err := prober.Inspect(context.Background(), cmd.Process.Pid)
	if err != nil {
		_ = end()
		return procstate.Identity{}, nil, err
	}
	return id, end, nil
}

// deadIdentity returns the identity of a process that has exited and been
// reaped. It is read while the helper still runs: one that has exited,
// even unreaped, cannot be inspected everywhere (Wine frees it at once).
func deadIdentity(t *testing.T) procstate.Identity {
	t.Helper()
	id, end := startHelper(t, "block", false)
	if err := end(); err != nil {
		t.Fatal(err)
	}
	id.Argv = []string{"hermes", "gateway", "run"}
	return id
}

func newStore(t *testing.T) (*Store, Layout) {
	t.Helper()
	dir := testdir.New(t)
	l := Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
	for _, d := range []string{l.Home, l.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return New(l, prober, zaptest.NewLogger(t), time.Now), l
}

func writeRecord(t *testing.T, path string, id procstate.Identity, home string) []byte {
	t.Helper()
	if err := WriteExclusive(path, NewRecord(id, home)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	return b
}

func byPath(es []Entry) map[string]Entry {
	m := map[string]Entry{}
	for _, e := range es {
		m[e.Path] = e
	}
	return m
}

// snapshot records every file and its bytes under dirs.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err == nil && de.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			}
			return nil
		})
	}
	return m
}

func TestSweepJudgesEveryOwner(t *testing.T) {
	s, l := newStore(t)
	live := startProc(t, "block", true)
	other := startProc(t, "block", false)
	dead := deadIdentity(t)
	wrongStart := live
	ws := *live.StartTime + 1000
	wrongStart.StartTime = &ws
	// other's pid and start time with a gateway's command line: a record
	// that other did not write.
	posing := other
	posing.Argv = live.Argv

	files := map[string]struct {
		id     procstate.Identity
		action Action
		want   procstate.Verdict
	}{
		l.PIDFile():                             {dead, ActionSwept, procstate.Dead},
		l.ScopedLock("telegram-bot-token", "a"): {live, ActionKeep, procstate.Alive},
		l.ScopedLock("discord-bot-token", "b"):  {posing, ActionSwept, procstate.Reused},
		// It wrote the record itself: kept, whatever its command line.
		l.ScopedLock("matrix", "e"):          {other, ActionKeep, procstate.Alive},
		l.ScopedLock("slack-app-token", "c"): {wrongStart, ActionSwept, procstate.Reused},
		l.ScopedLock("signal-phone", "d"):    {dead, ActionSwept, procstate.Dead},
	}
	liveBytes := map[string][]byte{}
	for p, f := range files {
		b := writeRecord(t, p, f.id, l.Home)
		if f.action == ActionKeep {
			liveBytes[p] = b
		}
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(es)
	for p, f := range files {
		e, ok := got[p]
		if !ok {
			t.Fatalf("%s not judged", p)
		}
		if e.Action != f.action || e.Verdict != f.want {
			t.Errorf("%s: %s/%s (%s), want %s/%s", filepath.Base(p), e.Verdict, e.Action, e.Reason, f.want, f.action)
		}
		_, statErr := os.Stat(p)
		if (f.action == ActionKeep) != (statErr == nil) {
			t.Errorf("%s: exists=%v after %s", filepath.Base(p), statErr == nil, e.Action)
		}
	}
	for p, b := range liveBytes {
		if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
			t.Errorf("%s of a live gateway changed", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(l.LockDir, "*.stale")); len(left) > 0 {
		t.Errorf("sweep left %v", left)
	}
	// The unrelated process whose pid a lock named was never touched.
	if v := prober.Judge(context.Background(), other, nil).Verdict; v != procstate.Alive {
		t.Errorf("unrelated process is %s after the sweep", v)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	s, l := newStore(t)
	dead := deadIdentity(t)
	writeRecord(t, l.PIDFile(), dead, l.Home)
	writeRecord(t, l.ScopedLock("telegram-bot-token", "a"), dead, l.Home)
	if err := os.WriteFile(l.ScopedLock("matrix", "m"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(l.ScopedLock("matrix", "m"), old, old)
	before := snapshot(t, l.Home, l.LockDir)
	es, err := s.Sweep(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[Action]int{}
	for _, e := range es {
		actions[e.Action]++
	}
	if actions[ActionSweep] != 2 || actions[ActionQuarantine] != 1 {
		t.Fatalf("dry-run actions %v", actions)
	}
	after := snapshot(t, l.Home, l.LockDir)
	if len(before) != len(after) {
		t.Fatalf("dry run changed the files: %v -> %v", keys(before), keys(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Fatalf("dry run changed %s", p)
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestCorruptFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		age     time.Duration
		action  Action
	}{
		{"empty, old", "", time.Hour, ActionQuarantined},
		{"truncated, old", `{"pid": 42, "kin`, time.Hour, ActionQuarantined},
		{"binary garbage, old", "\x00\xff\x13\x37", time.Hour, ActionQuarantined},
		{"wrong type, old", `{"pid": [42]}`, time.Hour, ActionQuarantined},
		{"huge, old", strings.Repeat("x", 2*MaxRecordSize), time.Hour, ActionQuarantined},
		{"empty, just written", "", 0, ActionKeep},
		{"truncated, just written", `{"pid": 4`, 0, ActionKeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			paths := []string{l.PIDFile(), l.ScopedLock("telegram-bot-token", "x")}
			for _, p := range paths {
				if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
				mt := time.Now().Add(-tt.age)
				_ = os.Chtimes(p, mt, mt)
			}
			es, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatalf("corrupt files are handled, not errors: %v", err)
			}
			got := byPath(es)
			for _, p := range paths {
				e := got[p]
				if e.Action != tt.action {
					t.Fatalf("%s: %s (%s), want %s", p, e.Action, e.Reason, tt.action)
				}
				if strings.Contains(e.Reason, "\n") {
					t.Fatalf("reason spans lines: %q", e.Reason)
				}
				if tt.action == ActionQuarantined {
					b, err := os.ReadFile(p + ".corrupt")
					if err != nil || string(b) != tt.content {
						t.Fatalf("corrupt bytes not kept in %s.corrupt: %v", p, err)
					}
					if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("%s still there", p)
					}
				} else if b, _ := os.ReadFile(p); string(b) != tt.content {
					t.Fatalf("%s changed", p)
				}
			}
		})
	}
}

func TestUnreadableAndBadLockDir(t *testing.T) {
	s, l := newStore(t)
	// A directory where a lock file should be cannot be read by anyone,
	// root included.
	odd := l.ScopedLock("telegram-bot-token", "dir")
	if err := os.Mkdir(odd, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := deadIdentity(t)
	writeRecord(t, l.PIDFile(), dead, l.Home)
	if err := os.WriteFile(l.PIDFile()+".unused", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(odd); err != nil {
		t.Fatalf("odd entry removed: %v", err)
	}
	if byPath(es)[l.PIDFile()].Action != ActionSwept {
		t.Fatalf("stale pid file not swept beside an odd entry: %+v", es)
	}

	// A lock dir that is a file: one line naming it and the fix.
	file := filepath.Join(testdir.New(t), "locks")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := New(Layout{Home: l.Home, LockDir: file}, prober, zaptest.NewLogger(t), time.Now)
	_, err = s2.Sweep(context.Background(), true)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != file || !strings.Contains(err.Error(), "not a directory") || !strings.Contains(err.Error(), "HERMES_GATEWAY_LOCK_DIR") {
		t.Fatalf("lock dir is a file: %v", err)
	}
	// A missing home and lock dir: nothing to judge, no error.
	s3 := New(Layout{Home: filepath.Join(file+"x", "h"), LockDir: filepath.Join(file+"x", "l")}, prober, zaptest.NewLogger(t), time.Now)
	if es, err := s3.Sweep(context.Background(), false); err != nil || len(es) != 0 {
		t.Fatalf("missing dirs: %v %v", es, err)
	}
}

func TestRuntimeLockIsNeverDeleted(t *testing.T) {
	s, l := newStore(t)
	dead := deadIdentity(t)
	writeRecord(t, l.RuntimeLock(), dead, l.Home)
	es, _ := s.Sweep(context.Background(), false)
	if e := byPath(es)[l.RuntimeLock()]; e.Action != ActionOK {
		t.Fatalf("free lock: %+v", e)
	}
	if _, err := os.Stat(l.RuntimeLock()); err != nil {
		t.Fatal("free gateway.lock deleted")
	}
	startProc(t, "lock", false, "LOCKSTORE_LOCK="+l.RuntimeLock())
	held, err := s.RuntimeLockHeld()
	if err != nil || !held {
		t.Fatalf("held lock not seen: %v %v", held, err)
	}
	es, _ = s.Sweep(context.Background(), false)
	if e := byPath(es)[l.RuntimeLock()]; e.Action != ActionKeep || e.Verdict != procstate.Alive {
		t.Fatalf("held lock: %+v", e)
	}
}

func TestStateFileMarkedStopped(t *testing.T) {
	s, l := newStore(t)
	dead := deadIdentity(t)
	err := UpdateState(l, time.Now(), func(m map[string]any) {
		b, _ := json.Marshal(NewRecord(dead, l.Home))
		_ = json.Unmarshal(b, &m)
		m["gateway_state"] = "running"
		m["platforms"] = map[string]any{"telegram": map[string]any{"state": "connected"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil || byPath(es)[l.StateFile()].Action != ActionMarkStopped {
		t.Fatalf("%+v %v", es, err)
	}
	var m map[string]any
	b, _ := os.ReadFile(l.StateFile())
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["gateway_state"] != "stopped" || !strings.Contains(m["exit_reason"].(string), "hermes-supervisor") || m["platforms"] == nil {
		t.Fatalf("state after mark-stopped: %s", b)
	}
}

// TestSweepBeforeStartLeavesDeadState: the sweep before a start leaves a
// running state file of a pid no process has to the gateway it starts,
// and still marks stopped one whose pid another process took.
func TestSweepBeforeStartLeavesDeadState(t *testing.T) {
	other := startProc(t, "block", false)
	reusedStart := *other.StartTime + 500
	tests := []struct {
		name        string
		owner       procstate.Identity
		wantStopped bool
	}{
		{"no such process", deadIdentity(t), false},
		{"pid reused", procstate.Identity{PID: other.PID, StartTime: &reusedStart, Argv: []string{"hermes", "gateway", "run"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkStateBeforeStart(t, tt.owner, tt.wantStopped) })
	}
}

// checkStateBeforeStart writes a running state file of owner, sweeps
// before a start, and checks the file was marked stopped, or else left
// untouched, as wantStopped says.
func checkStateBeforeStart(t *testing.T, owner procstate.Identity, wantStopped bool) {
	t.Helper()
	s, l := newStore(t)
	err := UpdateState(l, time.Now(), func(m map[string]any) {
		b, _ := json.Marshal(NewRecord(owner, l.Home))
		_ = json.Unmarshal(b, &m)
		m["gateway_state"] = "running"
	})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(l.StateFile())
	sum, err := s.SweepBeforeStart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(l.StateFile())
	stopped := !bytes.Equal(before, after) && bytes.Contains(after, []byte(`"gateway_state":"stopped"`))
	if stopped != wantStopped || (!stopped && !bytes.Equal(before, after)) {
		t.Fatalf("marked stopped %v, want %v; actions %v\nbefore %s\nafter  %s", stopped, wantStopped, sum.Actions, before, after)
	}
	if want := map[bool]Action{true: ActionMarkStopped, false: ActionOK}[wantStopped]; sum.Actions[want] != 1 {
		t.Fatalf("actions %v, want one %s", sum.Actions, want)
	}
}

// TestSweepSummaryRunning: the running gateway a sweep reports is the one
// Running finds after it, so that the supervisor need not read the home
// again before a start.
func TestSweepSummaryRunning(t *testing.T) {
	tests := []struct {
		name   string
		layout func(t *testing.T, l Layout)
		want   Kind // "" for none
	}{
		{"nothing", func(t *testing.T, l Layout) {}, ""},
		{"stale pid file", func(t *testing.T, l Layout) { writeRecord(t, l.PIDFile(), deadIdentity(t), l.Home) }, ""},
		{"live gateway's pid file", func(t *testing.T, l Layout) {
			writeRecord(t, l.PIDFile(), startProc(t, "block", true), l.Home)
		}, KindPIDFile},
		{"gateway.lock held", func(t *testing.T, l Layout) {
			startProc(t, "lock", true, "LOCKSTORE_LOCK="+l.RuntimeLock())
		}, KindRuntimeLock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			tt.layout(t, l)
			sum, err := s.SweepBeforeStart(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			after, ok := s.Running(context.Background())
			var got Kind
			if sum.Running != nil {
				got = sum.Running.Kind
			}
			if got != tt.want || ok != (tt.want != "") || (ok && after.Kind != got) {
				t.Fatalf("sweep says running %q, Running after says %v %+v; want %q", got, ok, after, tt.want)
			}
		})
	}
}

func TestMarkersAndLeftovers(t *testing.T) {
	s, l := newStore(t)
	live := startProc(t, "block", true)
	if err := WritePlannedStop(l, live, os.Getpid(), time.Now()); err != nil {
		t.Fatal(err)
	}
	expired := `{"target_pid": 1, "target_start_time": null, "written_at": "2020-01-01T00:00:00+00:00"}`
	if err := os.WriteFile(l.TakeoverMarker(), []byte(expired), 0o644); err != nil {
		t.Fatal(err)
	}
	half := l.ScopedLock("matrix", "m") + ".stale"
	young := l.ScopedLock("matrix", "n") + ".stale"
	for _, p := range []string{half, young} {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Minute)
	_ = os.Chtimes(half, old, old)
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(es)
	want := map[string]Action{l.PlannedStopMarker(): ActionKeep, l.TakeoverMarker(): ActionSwept, half: ActionSwept, young: ActionKeep}
	for p, a := range want {
		if got[p].Action != a {
			t.Errorf("%s: %s (%s), want %s", filepath.Base(p), got[p].Action, got[p].Reason, a)
		}
	}
}

// TestMarkerAtEndOfDay: Python 3.14, which current Hermes requires, reads
// "<today>T24:00:00+00:00" as tonight's midnight, a marker dated ahead and
// so fresh; 3.11 could not read it and called it stale. The sweep keeps
// it: a planned stop current Hermes honours is never removed under it.
func TestMarkerAtEndOfDay(t *testing.T) {
	s, l := newStore(t)
	raw := fmt.Sprintf(`{"target_pid": 1, "target_start_time": null, "written_at": "%sT24:00:00+00:00"}`, time.Now().UTC().Format(time.DateOnly))
	if err := os.WriteFile(l.PlannedStopMarker(), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(es)[l.PlannedStopMarker()]; got.Action != ActionKeep {
		t.Errorf("%s: %s (%s), want it kept as fresh", raw, got.Action, got.Reason)
	}
	if _, err := os.Stat(l.PlannedStopMarker()); err != nil {
		t.Errorf("the marker is gone: %v", err)
	}
}

func TestMarkerReasons(t *testing.T) {
	for _, c := range []struct{ raw, reason string }{
		{`{"target_pid": 1, "written_at": "2020-01-01T00:00:00+00:00"}`, `expired (written "2020-01-01T00:00:00+00:00")`},
		{`{"target_pid": 1}`, "undated (no written_at): counts as expired"},
		{`{"target_pid": 1, "written_at": ""}`, "undated (no written_at): counts as expired"},
	} {
		s, l := newStore(t)
		if err := os.WriteFile(l.PlannedStopMarker(), []byte(c.raw), 0o644); err != nil {
			t.Fatal(err)
		}
		es, _ := s.Sweep(context.Background(), true)
		if got := byPath(es)[l.PlannedStopMarker()]; got.Reason != c.reason || got.Action != ActionSweep {
			t.Errorf("%s: %s (%s), want sweep (%s)", c.raw, got.Action, got.Reason, c.reason)
		}
	}
}

func TestReleaseAndOwned(t *testing.T) {
	s, l := newStore(t)
	mine := deadIdentity(t)
	other := startProc(t, "block", true)
	samePIDOtherStart := mine
	st := *mine.StartTime + 7
	samePIDOtherStart.StartTime = &st
	writeRecord(t, l.PIDFile(), mine, l.Home)
	writeRecord(t, l.ScopedLock("telegram-bot-token", "a"), mine, l.Home)
	writeRecord(t, l.ScopedLock("discord-bot-token", "b"), other, l.Home)
	writeRecord(t, l.ScopedLock("slack-app-token", "c"), samePIDOtherStart, l.Home)

	owned, err := s.Owned(context.Background(), mine)
	if err != nil || len(owned) != 2 {
		t.Fatalf("owned: %+v %v", owned, err)
	}
	released, err := s.Release(context.Background(), mine)
	if err != nil || len(released) != 2 {
		t.Fatalf("released: %+v %v", released, err)
	}
	for _, p := range []string{l.PIDFile(), l.ScopedLock("telegram-bot-token", "a")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not released", p)
		}
	}
	for _, p := range []string{l.ScopedLock("discord-bot-token", "b"), l.ScopedLock("slack-app-token", "c")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s of another process released: %v", p, err)
		}
	}
}

// TestSweepBeforeStartReleases: the sweep before a restart releases the
// files of the gateway that just exited in its own pass, as Release
// does: only the records naming it (pid and start time), though to
// Hermes' rules its pid, an unreaped zombie, is alive, and under any name
// ending in .lock, as Release takes them; and only the file it read. The
// other records are judged as if those were gone already, and a pid file
// that was not removed after all is judged again for whether a gateway
// runs there, as a sweep after a separate release would.
func TestSweepBeforeStartReleases(t *testing.T) {
	const mine, other = "mine", "other"
	type releaseCase struct {
		name string
		// replaceWith, when set, swaps gateway.pid for a record of that
		// process after it was read; link, for a symlink.
		replaceWith string
		link        bool
		wantPID     bool   // gateway.pid is still there
		wantWhy     string // its entry's reason
		wantRunning string // the process Running names, if any
		wantErr     bool   // the sweep says what it could not read
	}
	tests := []releaseCase{
		{name: "released", wantWhy: releasedReason},
		{name: "replaced by another live gateway's", replaceWith: other, wantPID: true, wantRunning: other,
			wantWhy: "replaced by another file since it was judged: left alone for the next sweep"},
		{name: "replaced by the same record", replaceWith: mine, wantPID: true, wantRunning: mine,
			wantWhy: "replaced by another file since it was judged: left alone for the next sweep"},
	}
	if linkReplacement != nil { // where the OS has symlinks as POSIX does
		tests = append(tests, releaseCase{name: "replaced by a symlink", link: true, wantPID: true, wantErr: true,
			wantWhy: "replaced by a symlink or other non-regular file since it was judged: left alone"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			// Alive, as the unreaped gateway is to Hermes' rules.
			ids := map[string]procstate.Identity{mine: startProc(t, "block", true), other: startProc(t, "block", true)}
			writeRecord(t, l.PIDFile(), ids[mine], l.Home)
			writeRecord(t, l.ScopedLock("telegram-bot-token", "a"), ids[mine], l.Home)
			plugin := filepath.Join(l.LockDir, "my_plugin+scope.lock")
			writeRecord(t, plugin, ids[mine], l.Home)
			writeRecord(t, l.ScopedLock("discord-bot-token", "b"), ids[other], l.Home)
			// Without the release, the sweep keeps them: their owner runs.
			es, _ := s.Sweep(context.Background(), true)
			if got := byPath(es)[l.PIDFile()]; got.Action != ActionKeep {
				t.Fatalf("a live owner's gateway.pid: %s (%s), want keep", got.Action, got.Reason)
			}
			if tt.link {
				// Unreadable in both looks at the home, said once.
				linkReplacement.replace(t, l.StateFile(), l)
				s.beforeRemove = func(p string) {
					if p != l.PIDFile() {
						return
					}
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					linkReplacement.replace(t, p, l)
				}
			}
			if tt.replaceWith != "" {
				s.beforeRemove = func(p string) {
					if p != l.PIDFile() {
						return
					}
					tmp := p + ".new"
					writeRecord(t, tmp, ids[tt.replaceWith], l.Home)
					if err := os.Rename(tmp, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			core, logs := observer.New(zapcore.DebugLevel)
			s.log = zap.New(core)
			sum, err := s.SweepBeforeStart(context.Background(), ids[mine])
			if (err != nil) != tt.wantErr {
				t.Fatalf("sweep error %v, want one: %v", err, tt.wantErr)
			}
			said := func(path string) int { return strings.Count("\n"+err.Error(), "\n"+path+":") }
			if err != nil && (said(l.StateFile()) != 1 || said(l.PIDFile()) != 1) {
				t.Errorf("sweep error %q: each unreadable file once", err)
			}
			if sum.Released != 3 {
				t.Errorf("released %d, want 3", sum.Released)
			}
			switch {
			case tt.wantRunning == "" && sum.Running != nil:
				t.Errorf("running %+v: the released gateway.pid counted", sum.Running)
			case tt.wantRunning != "" && (sum.Running == nil || sum.Running.Record == nil || sum.Running.Record.PID != ids[tt.wantRunning].PID):
				t.Errorf("running %+v, want the kept gateway.pid's pid %d", sum.Running, ids[tt.wantRunning].PID)
			}
			_, err = os.Stat(l.PIDFile())
			if gotPID := err == nil; gotPID != tt.wantPID {
				t.Errorf("gateway.pid there: %v, want %v", gotPID, tt.wantPID)
			}
			for _, p := range []string{l.ScopedLock("telegram-bot-token", "a"), plugin} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the exited gateway's %s: %v, want released", filepath.Base(p), err)
				}
			}
			if _, err := os.Stat(l.ScopedLock("discord-bot-token", "b")); err != nil {
				t.Errorf("another gateway's scoped lock: %v, want kept", err)
			}
			var why []string
			for _, e := range logs.FilterField(zap.String("path", l.PIDFile())).All() {
				why = append(why, e.ContextMap()["reason"].(string))
			}
			if len(why) != 1 || why[0] != tt.wantWhy {
				t.Errorf("gateway.pid logged %q, want %q", why, tt.wantWhy)
			}
		})
	}
}

// TestSweepBeforeStartReadsOtherLocksAsRecords: another program's big
// *.lock in a shared lock dir is read, for a release, no further than a
// record can go, as Release reads it: not whole on every restart.
func TestSweepBeforeStartReadsOtherLocksAsRecords(t *testing.T) {
	s, l := newStore(t)
	big := filepath.Join(l.LockDir, "other-program.lock")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Far past a record, below what a judged file is read up to.
	if _, err := f.Write(make([]byte, 16<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := s.SweepBeforeStart(context.Background(), deadIdentity(t)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("the sweep allocated %d bytes: it read the 16 MiB file whole", got)
	}
	if _, err := os.Stat(big); err != nil {
		t.Errorf("another program's lock: %v, want it kept", err)
	}
}

func TestWriteExclusiveAndAtomic(t *testing.T) {
	dir := testdir.New(t)
	p := filepath.Join(dir, "gateway.pid")
	rec := Record{PID: 5, Kind: GatewayKind}
	if err := WriteExclusive(p, rec); err != nil {
		t.Fatal(err)
	}
	if err := WriteExclusive(p, rec); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second exclusive write: %v", err)
	}
	a := filepath.Join(dir, "state.json")
	for i := 0; i < 3; i++ {
		if err := WriteFileAtomic(a, []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	des, _ := os.ReadDir(dir)
	if len(des) != 2 {
		t.Fatalf("temp files left: %v", des)
	}
	if b, _ := os.ReadFile(a); string(b) != "xx" {
		t.Fatalf("content %q", b)
	}
}

func TestWritePlannedStop(t *testing.T) {
	l := Layout{Home: testdir.New(t)}
	start := int64(881234)
	self := procstate.Identity{PID: 4242, StartTime: &start}
	now := time.Now()
	// What we write is what Python's fromisoformat reads: an offset, no Z.
	if err := WritePlannedStop(l, self, 777, now); err != nil {
		t.Fatal(err)
	}
	m, err := ReadPlannedStop(l.PlannedStopMarker())
	if err != nil || strings.HasSuffix(m.WrittenAt, "Z") || !strings.HasSuffix(m.WrittenAt, "+00:00") || m.StopperPID != 777 {
		t.Fatalf("marker %+v %v", m, err)
	}
}

// BenchmarkSweep sweeps 1000 scoped locks: a third naming dead pids, a
// third a live process with another start time, a third a live gateway.
func BenchmarkSweep(b *testing.B) {
	live := startProc(b, "block", true)
	other := startProc(b, "block", false)
	var dead []int
	for pid := 1<<22 - 1; len(dead) < 400; pid-- {
		if _, err := prober.Inspect(context.Background(), pid); errors.Is(err, procstate.ErrNoProcess) {
			dead = append(dead, pid)
		}
	}
	const n = 1000
	write := func(dir string) {
		for i := range n {
			id := live
			switch i % 3 {
			case 0:
				st := int64(1000 + i)
				id = procstate.Identity{PID: dead[i%len(dead)], StartTime: &st, Argv: []string{"hermes", "gateway", "run"}}
			case 1:
				st := *other.StartTime + int64(1000+i)
				id = procstate.Identity{PID: other.PID, StartTime: &st, Argv: []string{"hermes", "gateway", "run"}}
			}
			rec := NewRecord(id, "/home/bench/.hermes")
			rec.Scope = "telegram-bot-token"
			token := fmt.Sprint("token-", i)
			rec.IdentityHash = IdentityHash(token)
			if err := WriteExclusive(Layout{LockDir: dir}.ScopedLock(rec.Scope, token), rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := b.TempDir()
		l := Layout{Home: filepath.Join(root, "home"), LockDir: filepath.Join(root, "locks")}
		_ = os.MkdirAll(l.Home, 0o700)
		_ = os.MkdirAll(l.LockDir, 0o700)
		write(l.LockDir)
		s := New(l, prober, zap.NewNop(), time.Now)
		b.StartTimer()
		if _, err := s.Sweep(ctx, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/file")
}

// TestSweepRaceWithAClaim replaces a stale file in the window between its
// judgement and its removal, as a gateway claiming the lock does.
func TestSweepRaceWithAClaim(t *testing.T) {
	live := startProc(t, "block", true)
	tests := []struct {
		name      string
		newOwner  procstate.Identity
		wantKept  bool
		wantEntry Action
	}{
		{"claimed by a live gateway", live, true, ActionKeep},
		// Another file under the name was not judged: the sweep leaves
		// it, stale or not, to the next sweep rather than remove a file
		// it never looked at.
		{"replaced by another dead owner", deadIdentity(t), true, ActionKeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			path := l.ScopedLock("telegram-bot-token", "a")
			writeRecord(t, path, deadIdentity(t), l.Home)
			s.beforeRemove = func(p string) {
				if p != path {
					return
				}
				tmp := p + ".new"
				writeRecord(t, tmp, tt.newOwner, l.Home)
				if err := os.Rename(tmp, p); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			var got *Entry
			for i := range entries {
				if entries[i].Path == path {
					got = &entries[i]
				}
			}
			if got == nil || got.Action != tt.wantEntry {
				t.Fatalf("entry %+v, want action %s", got, tt.wantEntry)
			}
			rec, err := ReadRecord(path)
			if tt.wantKept {
				if err != nil || rec.PID != tt.newOwner.PID {
					t.Fatalf("the replacement was lost: %+v %v", rec, err)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stale replacement kept: %v", err)
			}
			if _, err := os.Stat(path + ".stale"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf(".stale left behind: %v", err)
			}
		})
	}
}

func TestSweepReportsEachErrorOnce(t *testing.T) {
	s, l := newStore(t)
	if err := os.Mkdir(l.PIDFile(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		_, err := s.Sweep(context.Background(), dry)
		var fe *FileError
		// errors.Join puts one error per line.
		if !errors.As(err, &fe) || strings.Contains(err.Error(), "\n") {
			t.Errorf("dry run %v: want one error naming %s, got %v", dry, l.PIDFile(), err)
		}
	}
}

// TestSweepReportsEachActErrorOnce: a file acted on as soon as it is
// judged has its action's error in the sweep's error once, whether it is
// in the home or the lock dir, judged on one goroutine or several.
func TestSweepReportsEachActErrorOnce(t *testing.T) {
	for _, n := range []int{3, 2*fileItems + 2} {
		s, l := newStore(t)
		s.WithWorkers(2)
		writeRecord(t, l.PIDFile(), deadIdentity(t), l.Home)
		want := []string{l.PIDFile()}
		for i := range n {
			p := l.ScopedLock("telegram-bot-token", strconv.Itoa(i))
			writeRecord(t, p, deadIdentity(t), l.Home)
			want = append(want, p)
		}
		act := func(_ int, e *judged) {
			if e.Action == ActionSweep {
				s.fail(e, "remove", errors.New("injected"))
			}
		}
		_, err := s.judgeEach(context.Background(), nil, nil, nil, false, act, func([]judged) {})
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			t.Fatalf("%d lock files: want the errors joined, got %v", n, err)
		}
		times := map[string]int{}
		for _, e := range joined.Unwrap() {
			var fe *FileError
			if !errors.As(e, &fe) {
				t.Fatalf("%d lock files: an error naming no file: %v", n, e)
			}
			times[fe.Path]++
		}
		for _, p := range want {
			if times[p] != 1 {
				t.Errorf("%d lock files: %s is in the error %d times, want once", n, filepath.Base(p), times[p])
			}
		}
		if len(times) != len(want) {
			t.Errorf("%d lock files: errors for %d files, want %d:\n%v", n, len(times), len(want), err)
		}
	}
}

// TestWorkersBound: a store's bound is GOMAXPROCS unless set.
func TestWorkersBound(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ bound, workers int }{{0, procs}, {-1, procs}, {1, 1}, {3, 3}} {
		if w := (&Store{}).WithWorkers(tc.bound).workers(); w != tc.workers {
			t.Errorf("bound %d: %d workers, want %d", tc.bound, w, tc.workers)
		}
	}
}

// TestRulesReadTheCommandLineOnlyWhereItDecides: a live pid whose records
// all conflict on start time is settled by one read, without its command
// line; one that a record leaves to the command line has it read; and a
// record judged on a look whose command line was never read (rules with
// fixed looks and no looker) is kept, never swept on it.
func TestRulesReadTheCommandLineOnlyWhereItDecides(t *testing.T) {
	s, l := newStore(t)
	reused := startProc(t, "block", true)
	mixed := startProc(t, "block", false)
	dead := deadIdentity(t)
	later := func(id procstate.Identity) procstate.Identity {
		st := *id.StartTime + 1000
		id.StartTime = &st
		return id
	}
	r := s.rules(context.Background())
	for _, tt := range []struct {
		name    string
		id      procstate.Identity
		verdict procstate.Verdict
		action  Action
	}{
		{"reused's pid, another start time", later(reused), procstate.Reused, ActionSweep},
		{"mixed's pid, another start time", later(mixed), procstate.Reused, ActionSweep},
		{"mixed's own record", mixed, procstate.Alive, ActionKeep},
		{"a dead pid", dead, procstate.Dead, ActionSweep},
	} {
		if d := r.scopedLockFile(*factsOf(t, tt.id, l.Home)); d.action != tt.action || d.verdict != tt.verdict {
			t.Errorf("%s: %s/%s (%s), want %s/%s", tt.name, d.verdict, d.action, d.reason, tt.verdict, tt.action)
		}
	}
	// reused runs and its command line can be read: none was, so none
	// was read.
	if p := r.looks.pids[reused.PID]; p == nil || p.argv != nil || p.facts.err != nil {
		t.Errorf("a pid only named with another start time: %+v; want it glanced at, its command line unread", p)
	}
	if p := r.looks.pids[mixed.PID]; p == nil || !procstate.ArgvMatches(mixed.Argv, p.argv) {
		t.Errorf("a pid one record names with its own start time: %+v; want its command line %q read", p, mixed.Argv)
	}
	if p := r.looks.pids[dead.PID]; p == nil || !errors.Is(p.facts.err, procstate.ErrNoProcess) || p.argv != nil {
		t.Errorf("a dead pid: %+v", p)
	}
	// The guard: a look without its command line decides nothing that
	// the command line would. Without it, this gateway-less record of a
	// live pid would be swept as "command line unreadable".
	fixed := &rules{home: l.Home, now: time.Now(), procs: map[int]procFacts{
		reused.PID: {live: procstate.Live{PID: reused.PID, StartTime: reused.StartTime}, argvUnread: true},
	}}
	own := reused
	own.Argv = []string{"python3", "gw.py"}
	f := *factsOf(t, own, l.Home)
	for name, d := range map[string]decision{"scoped lock": fixed.scopedLockFile(f), "pid file": fixed.pidFile(f, lockNone, nil, false)} {
		if d.action != ActionKeep || d.verdict != procstate.Unknown {
			t.Errorf("%s judged on an unread command line: %s/%s (%s), want unknown/keep", name, d.verdict, d.action, d.reason)
		}
	}
}

// TestRulesLookOnManyGoroutines: records judged at once on several
// goroutines, two per pid, as a sweep's pass judges them: one look per
// pid, its command line read only where a record needs it, and every
// gateway's own record kept, every reused pid's swept.
func TestRulesLookOnManyGoroutines(t *testing.T) {
	s, l := newStore(t)
	var fs []*fileFacts
	var own, reused []procstate.Identity
	for i := range 2*fileItems + 2 {
		id := startProc(t, "block", i%2 == 0)
		if i%2 == 0 {
			own = append(own, id)
		} else {
			st := *id.StartTime + 1000
			id.StartTime = &st
			reused = append(reused, id)
		}
		fs = append(fs, factsOf(t, id, l.Home), factsOf(t, id, l.Home))
	}
	r := s.rules(context.Background())
	ds := make([]decision, len(fs))
	parallelOn(4, len(fs), 1, func(_, i int) { ds[i] = r.scopedLockFile(*fs[i]) })
	if len(r.looks.pids) != len(own)+len(reused) {
		t.Errorf("%d looks for %d pids", len(r.looks.pids), len(own)+len(reused))
	}
	for _, id := range own {
		if p := r.looks.pids[id.PID]; p == nil || !procstate.ArgvMatches(id.Argv, p.argv) {
			t.Errorf("pid %d, its own record: %+v; want its command line %q read", id.PID, p, id.Argv)
		}
	}
	for _, id := range reused {
		if p := r.looks.pids[id.PID]; p == nil || p.argv != nil {
			t.Errorf("pid %d, only named with another start time: %+v; want its command line unread", id.PID, p)
		}
	}
	for i, d := range ds {
		want := ActionKeep
		if i/2%2 == 1 {
			want = ActionSweep
		}
		if d.action != want {
			t.Errorf("record %d: %s/%s (%s), want %s", i, d.verdict, d.action, d.reason, want)
		}
	}
}

// factsOf is id's record, written for home, as store.go reads it.
func factsOf(t *testing.T, id procstate.Identity, home string) *fileFacts {
	t.Helper()
	data, err := NewRecord(id, home).Encode()
	if err != nil {
		t.Fatal(err)
	}
	f := recordFacts(data, time.Now(), false, nil)
	return &f
}
