package procstate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("PROCSTATE_HELPER") == "block" {
		// Until the new program runs, its command line reads empty: the
		// parent waits for this line before it reads the identity.
		os.Stdout.WriteString("running\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func isGateway(argv []string) bool { return len(argv) > 1 && argv[1] == "demo-gateway" }

// start runs this binary blocking on stdin; gateway makes its command
// line look like a gateway's.
func start(t *testing.T, gateway bool) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	var args []string
	if gateway {
		args = []string{"demo-gateway"}
	}
	return startPath(t, os.Args[0], args...)
}

// startPath is start of the binary at path (a link to this one).
func startPath(t *testing.T, path string, args ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "PROCSTATE_HELPER=block")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, len("running\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "running\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	return cmd, in
}

func TestVerdictText(t *testing.T) {
	stale := map[Verdict]bool{Unknown: false, Alive: false, Dead: true, Zombie: true, Stopped: true, Reused: true}
	for v, want := range stale {
		if v.Stale() != want {
			t.Errorf("%s.Stale() = %v", v, !want)
		}
		b, _ := v.MarshalText()
		var back Verdict
		if err := back.UnmarshalText(b); err != nil || back != v {
			t.Errorf("round trip of %s: %v %v", v, back, err)
		}
	}
	var v Verdict
	if v.UnmarshalText([]byte("undead")) == nil {
		t.Error("unknown name accepted")
	}
}

// TestNoProcess: the error made without fmt reads and matches as the one
// fmt made.
func TestNoProcess(t *testing.T) {
	for _, pid := range []int{0, 7, 4194303, -1} {
		err, want := NoProcess(pid), fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		if err.Error() != want.Error() || !errors.Is(err, ErrNoProcess) {
			t.Errorf("NoProcess(%d) = %q (is ErrNoProcess: %v), want %q", pid, err, errors.Is(err, ErrNoProcess), want)
		}
	}
}

func TestJudge(t *testing.T) {
	p := NewProber(Options{StartTolerance: -1})
	ctx := context.Background()
	gw, _ := start(t, true)
	other, _ := start(t, false)
	live, err := p.Inspect(ctx, gw.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := p.Inspect(ctx, other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	dead := func() Identity {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PROCSTATE_HELPER=block")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		id, _ := p.Inspect(ctx, c.Process.Pid)
		_ = c.Wait()
		return id
	}()
	shift := func(id Identity, d int64) Identity {
		v := *id.StartTime + d
		id.StartTime = &v
		return id
	}
	tests := []struct {
		name string
		rec  Identity
		want Verdict
	}{
		{"same process", live, Alive},
		{"same process, start unknown", Identity{PID: live.PID, Argv: live.Argv}, Alive},
		{"dead", dead, Dead},
		{"pid zero", Identity{PID: 0}, Dead},
		{"negative pid", Identity{PID: -1}, Dead},
		{"other start time", shift(live, 1000), Reused},
		{"start time a tick off, same argv", shift(live, p.tolerance+1), Reused},
		// The process wrote the record itself: its files are its own,
		// whatever its command line looks like.
		{"non-gateway that wrote the record", otherID, Alive},
		// Same tick, other program: the pid was reused within 10 ms.
		{"same start time, other command line", Identity{PID: live.PID, StartTime: live.StartTime, Argv: []string{"/bin/sleep", "30"}}, Reused},
		{"same start time, gateway-shaped record of another program", Identity{PID: otherID.PID, StartTime: otherID.StartTime, Argv: []string{"hermes", "gateway", "run"}}, Reused},
		{"non-gateway, start unknown", Identity{PID: otherID.PID, Argv: []string{"hermes", "gateway", "run"}}, Reused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := p.Judge(ctx, tt.rec, isGateway)
			if obs.Verdict != tt.want {
				t.Fatalf("got %s (%s), want %s", obs.Verdict, obs.Reason, tt.want)
			}
			if obs.Reason == "" {
				t.Fatal("no reason given")
			}
		})
	}
	if obs := p.Judge(ctx, otherID, nil); obs.Verdict != Alive {
		t.Fatalf("without a gateway test, a live same process is alive: %s", obs.Reason)
	}
}

func TestInspectSelfAndWaitGone(t *testing.T) {
	p := NewProber(Options{StartTolerance: -1})
	self, err := p.Self(context.Background())
	if err != nil || self.PID != os.Getpid() || self.StartTime == nil || !slices.Equal(self.Argv, os.Args) {
		t.Fatalf("self: %+v %v", self, err)
	}
	if !self.Same(self) || self.Same(Identity{PID: self.PID}) || !strings.Contains(self.String(), "start time") {
		t.Fatalf("identity helpers on %v", self)
	}
	cmd, in := start(t, true)
	id, err := p.Inspect(context.Background(), cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.WaitGone(ctx, id, isGateway, time.Millisecond); err == nil {
		t.Fatal("WaitGone returned while the process runs")
	}
	done := make(chan error, 1)
	go func() { done <- p.WaitGone(context.Background(), id, isGateway, time.Millisecond) }()
	in.Close()
	_ = cmd.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkJudge measures one identity check, the unit of every sweep.
func BenchmarkJudge(b *testing.B) {
	ctx := context.Background()
	p := NewProber(Options{StartTolerance: -1})
	self, err := p.Self(ctx)
	if err != nil {
		b.Fatal(err)
	}
	other := self
	st := *self.StartTime + 100000
	other.StartTime = &st
	dead := Identity{PID: 1 << 30, StartTime: self.StartTime, Argv: self.Argv}
	any := func([]string) bool { return true }
	for _, c := range []struct {
		name string
		id   Identity
		want Verdict
	}{{"alive", self, Alive}, {"reused", other, Reused}, {"dead", dead, Dead}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := p.Judge(ctx, c.id, any).Verdict; v != c.want {
					b.Fatalf("verdict %s, want %s", v, c.want)
				}
			}
		})
	}
}

func BenchmarkInspect(b *testing.B) {
	ctx := context.Background()
	p := NewProber(Options{StartTolerance: -1})
	pid := os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Inspect(ctx, pid); err != nil {
			b.Fatal(err)
		}
	}
}

func TestArgvMatches(t *testing.T) {
	tests := []struct {
		name      string
		rec, live []string
		want      bool
	}{
		{"equal", []string{"/bin/gw", "run"}, []string{"/bin/gw", "run"}, true},
		{"console script under its interpreter", []string{"/usr/bin/hermes", "gateway", "run"}, []string{"/usr/bin/python3", "/usr/bin/hermes", "gateway", "run"}, true},
		{"interpreter options", []string{"/usr/bin/hermes", "gateway"}, []string{"python3", "-u", "/usr/bin/hermes", "gateway"}, true},
		{"relative argv[0]", []string{"hermes", "gateway", "run"}, []string{"/usr/bin/python3", "/home/a/.local/bin/hermes", "gateway", "run"}, true},
		{"python -m", []string{"/src/hermes_cli/main.py", "gateway", "run"}, []string{"python3", "-m", "hermes_cli.main", "gateway", "run"}, true},
		{"windows launcher", []string{`C:\venv\Scripts\hermes.exe`, "gateway", "run"}, []string{`C:\Python\python.exe`, `C:\venv\Scripts\hermes.exe`, "gateway", "run"}, true},
		{"other program, same arguments", []string{"/usr/bin/hermes", "gateway", "run"}, []string{"/bin/sleep", "gateway", "run"}, false},
		{"other arguments", []string{"/usr/bin/hermes", "gateway", "run"}, []string{"/usr/bin/hermes", "gateway", "stop"}, false},
		{"shorter live", []string{"/usr/bin/hermes", "gateway", "run"}, []string{"run"}, false},
		{"empty record", nil, []string{"/bin/sleep"}, false},
		{"sleep", []string{"/tmp/x.test", "demo-gateway"}, []string{"sleep", "30"}, false},
	}
	for _, tt := range tests {
		if got := ArgvMatches(tt.rec, tt.live); got != tt.want {
			t.Errorf("%s: ArgvMatches(%q, %q) = %v, want %v", tt.name, tt.rec, tt.live, got, tt.want)
		}
	}
}
