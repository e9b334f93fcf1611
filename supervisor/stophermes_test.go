package supervisor

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// hermesSentinel is a process StopHermes must never touch: it appends the
// name of every signal it gets to file (the runtime's own SIGURG and the
// SIGCHLD of its children aside) and exits 0 when its stdin closes; killed,
// it exits otherwise.
func hermesSentinel(file string) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		return 3
	}
	for {
		select {
		case s := <-sigs:
			if n := s.String(); n == "urgent I/O condition" || n == "child exited" {
				continue
			}
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return 4
			}
			_, _ = f.WriteString(s.String() + "\n")
			_ = f.Close()
		case <-eof:
			return 0
		}
	}
}

type stopHermesEnv struct {
	t      *testing.T
	layout lockstore.Layout
	dir    string
	prober *procstate.Prober
}

func newStopHermesEnv(t *testing.T) *stopHermesEnv { return newStopHermesEnvIn(t, testdir.New(t)) }

// newStopHermesEnvIn is newStopHermesEnv with its home and lock dir in dir.
func newStopHermesEnvIn(t *testing.T, dir string) *stopHermesEnv {
	e := &stopHermesEnv{t: t, dir: dir, layout: lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")},
		prober: procstate.NewProber(procstate.Options{StartTolerance: -1})}
	for _, d := range []string{e.layout.Home, e.layout.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// waitFile polls for a file another process writes (atomically), with a
// deadline: there is no event to wait on across processes here.
func (e *stopHermesEnv) waitFile(path string) []byte {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s was never written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDead polls, with a deadline, until id no longer names a live process.
func (e *stopHermesEnv) waitDead(id procstate.Identity, what string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.prober.WaitGone(ctx, id, nil, 20*time.Millisecond); err != nil {
		e.t.Fatalf("%s %s still runs: %v", what, id, err)
	}
}

// startGateway starts the demo gateway as Hermes' own would run: not a
// supervisor's (no nonce), holding the home, and returns once it runs.
func (e *stopHermesEnv) startGateway(args ...string) (exited func() error) {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{demogateway.Command, "-home", e.layout.Home, "-lock-dir", e.layout.LockDir}, args...)...)
	cmd.Env = gatewayEnv(e.layout)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	var err error
	go func() { err = cmd.Wait(); close(done) }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return func() error { <-done; return err }
}

// gatewayEnv is this process's environment for a gateway Hermes itself
// runs for l: its home and lock dir, and no supervisor's nonce.
func gatewayEnv(l lockstore.Layout) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvNonce+"=") {
			env = append(env, kv)
		}
	}
	return append(env, "HERMES_HOME="+l.Home, "HERMES_GATEWAY_LOCK_DIR="+l.LockDir)
}

// grandchild returns the identity of the gateway's grandchild, once the
// gateway has written its pid to file (its last step before it runs), and
// kills it at cleanup if it is still that process.
func (e *stopHermesEnv) grandchild(file string) procstate.Identity {
	e.t.Helper()
	gc, err := strconv.Atoi(strings.TrimSpace(string(e.waitFile(file))))
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := e.prober.Inspect(context.Background(), gc)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if again, err := e.prober.Inspect(context.Background(), gc); err == nil && again.Same(id) {
			if p, err := os.FindProcess(gc); err == nil {
				_ = p.Kill()
			}
		}
	})
	return id
}

func (e *stopHermesEnv) stop(wait time.Duration) error {
	return HermesStop{Layout: e.layout, Wait: wait}.StopHermes(context.Background())
}

// A gateway Hermes runs for the home stops as Hermes' own `gateway stop`
// makes it: planned-stop marker (and SIGTERM on POSIX), exit 0 recorded
// as a planned stop; a wedged one, after the wait, is killed with its tree.
func TestStopHermesStopsHermesGateway(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		planned bool // exits 0 on the marker, else is killed
	}{
		{name: "answers the marker", planned: true},
		{name: "wedged, with a grandchild", args: []string{"-ignore-term", "-spawn-grandchild"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newStopHermesEnv(t)
			ready := filepath.Join(e.dir, "grandchild.pid")
			exited := e.startGateway(append(tt.args, "-spawn-grandchild", "-grandchild-pid-file", ready)...)
			gcID := e.grandchild(ready)
			rec := mustRecord(t, e.layout.PIDFile())
			if err := e.stop(2 * time.Second); err != nil {
				t.Fatal(err)
			}
			err := exited()
			var ee *exec.ExitError
			switch {
			case tt.planned && err != nil:
				t.Fatalf("the gateway %d did not exit 0 on the marker: %v", rec.PID, err)
			case !tt.planned && !errors.As(err, &ee):
				t.Fatalf("the wedged gateway %d was not killed: %v", rec.PID, err)
			}
			if !tt.planned {
				e.waitDead(gcID, "the gateway's grandchild")
			}
		})
	}
}

// A gateway whose record has no start time is Hermes' by every rule, but
// nothing proves its pid: StopHermes says what to do and leaves it running.
func TestStopHermesRefusesAGatewayWithoutStartTime(t *testing.T) {
	e := newStopHermesEnv(t)
	ready := filepath.Join(e.dir, "grandchild.pid")
	exited := e.startGateway("-no-start-time", "-spawn-grandchild", "-grandchild-pid-file", ready)
	e.grandchild(ready)
	if err := e.stop(time.Second); !errors.Is(err, ErrHermesStillRuns) {
		t.Fatalf("StopHermes over a record without start time: %v, want %v", err, ErrHermesStillRuns)
	}
	if _, err := os.Stat(e.layout.PlannedStopMarker()); err == nil {
		t.Error("a planned-stop marker was written for a gateway not proven")
	}
	rec := mustRecord(t, e.layout.PIDFile())
	if obs := e.prober.Judge(context.Background(), rec.Identity(), lockstore.IsGatewayArgv); obs.Verdict != procstate.Alive {
		t.Errorf("the gateway %d is %v after a refused stop: %s", rec.PID, obs.Verdict, obs.Reason)
	}
	_ = exited
}

// A record naming an unrelated process (the sentinel, with its real start
// time) or one that cannot be proven leaves it alone, signal-free.
func TestStopHermesSparesWhatItCannotProve(t *testing.T) {
	for _, tt := range []struct {
		name   string
		forge  func(rec *lockstore.Record)
		refuse bool // StopHermes says so; else it sees no gateway at all
	}{
		{name: "the sentinel's own pid, start time and command line", refuse: true},
		{name: "no start time", forge: func(r *lockstore.Record) { r.StartTime = nil }},
		{name: "a gateway's command line", forge: func(r *lockstore.Record) { r.Argv = []string{"hermes", "gateway", "run"} }},
		{name: "another start time", forge: func(r *lockstore.Record) { s := *r.StartTime + 500; r.StartTime = &s }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newStopHermesEnv(t)
			sn := startHermesSentinel(t, e.dir, e.prober)
			rec := lockstore.NewRecord(sn.id, e.layout.Home)
			if tt.forge != nil {
				tt.forge(&rec)
			}
			if err := lockstore.WriteExclusive(e.layout.PIDFile(), rec); err != nil {
				t.Fatal(err)
			}
			err := e.stop(time.Second)
			switch {
			case tt.refuse && !errors.Is(err, ErrHermesStillRuns):
				t.Errorf("StopHermes over a forged record: %v, want %v", err, ErrHermesStillRuns)
			case !tt.refuse && err != nil:
				t.Errorf("StopHermes over a record of no live gateway: %v", err)
			}
			if _, err := os.Stat(e.layout.PlannedStopMarker()); err == nil {
				t.Error("a planned-stop marker was written for a process not proven the gateway")
			}
			sn.end(t)
		})
	}
}

// sentinelProc is a running hermesSentinel.
type sentinelProc struct {
	id   procstate.Identity
	in   io.WriteCloser // closing it ends the sentinel with exit 0
	sigs string         // the signals it got, one name a line
	done chan struct{}  // closed once it has exited and been reaped
	exit error
}

// startHermesSentinel starts hermesSentinel, recording into dir, and
// returns it once it records signals and its identity is settled.
func startHermesSentinel(t *testing.T, dir string, p *procstate.Prober) *sentinelProc {
	t.Helper()
	sn := &sentinelProc{sigs: filepath.Join(dir, "signals"), done: make(chan struct{})}
	cmd := exec.Command(os.Args[0], "hermes-sentinel", sn.sigs)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	sn.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { sn.exit = cmd.Wait(); close(sn.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-sn.done })
	if _, err := os.Stat(sn.sigs); err != nil {
		// Its signal file exists once it records signals. Polled, with a
		// deadline: the sentinel makes it in another process, and nothing
		// here is told.
		for deadline := time.Now().Add(20 * time.Second); err != nil && time.Now().Before(deadline); _, err = os.Stat(sn.sigs) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	sn.id = inspectAs(t, p, cmd.Process.Pid, "hermes-sentinel")
	return sn
}

// end closes the sentinel's stdin and checks that it exited on its own,
// never signalled.
func (sn *sentinelProc) end(t *testing.T) {
	t.Helper()
	if err := sn.in.Close(); err != nil {
		t.Fatal(err)
	}
	if <-sn.done; sn.exit != nil {
		t.Errorf("the sentinel did not exit on its own: %v", sn.exit)
	}
	if got, _ := os.ReadFile(sn.sigs); len(got) > 0 {
		t.Errorf("the sentinel was signalled: %q", got)
	}
}

// inspectAs reads pid's identity once its command line shows word (a
// forked child shows its parent's until exec).
func inspectAs(t *testing.T, p *procstate.Prober, pid int, word string) procstate.Identity {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		id, err := p.Inspect(context.Background(), pid)
		if err == nil && id.StartTime != nil && len(id.Argv) > 1 && id.Argv[1] == word {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never settled: %+v, %v", pid, id, err)
		}
		// Polled: a command line changes at exec in another process, and
		// nothing tells us when.
		time.Sleep(time.Millisecond)
	}
}
