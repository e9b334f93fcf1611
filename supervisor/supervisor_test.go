package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The test binary doubles as the demo gateway, so children are real
// processes that treat the files exactly as the gateway does.
func TestMain(m *testing.M) {
	conformance.RunHelper()
	if len(os.Args) > 1 && os.Args[1] == demogateway.Command {
		os.Exit(demogateway.Main(os.Args[2:], os.Getenv, os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "launcher" {
		os.Exit(launcher(os.Args[2:]))
	}
	if len(os.Args) > 3 && os.Args[1] == "record-start" {
		os.Exit(recordStart(os.Args[2], os.Args[3:]))
	}
	if len(os.Args) > 2 && os.Args[1] == "hermes-sentinel" {
		os.Exit(hermesSentinel(os.Args[2]))
	}
	testHelper(os.Args[1:])
	os.Exit(m.Run())
}

// offsetClock is the wall clock plus an offset the test moves forward, so
// that uptime-based policy can be exercised without waiting for it.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                 { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) NewTimer(d time.Duration) Timer { return SystemClock{}.NewTimer(d) }
func (c *offsetClock) advance(d time.Duration)        { c.offset.Add(int64(d)) }

type harness struct {
	t      *testing.T
	layout lockstore.Layout
	sup    *Supervisor
	clock  *offsetClock
	states chan *Status
	cancel context.CancelFunc
	done   chan error
	prober *procstate.Prober
	logs   *observer.ObservedLogs // everything the supervisor logged
	// prepare, when set, changes the supervisor's insides before Run.
	prepare func(*Supervisor)
	// awaited are the messages logged waits for, each closed at its
	// first entry after the wait began.
	awaitedMu sync.Mutex
	awaited   map[string]chan struct{}
}

// logged returns a channel closed once the supervisor logs an entry with
// message msg: a wait on the event itself, where polling the observed
// logs would sleep. Call it before what should log it.
func (h *harness) logged(msg string) <-chan struct{} {
	h.awaitedMu.Lock()
	defer h.awaitedMu.Unlock()
	if h.awaited == nil {
		h.awaited = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	h.awaited[msg] = ch
	return ch
}

// hear closes the channel awaiting e's message, if any.
func (h *harness) hear(e zapcore.Entry) error {
	h.awaitedMu.Lock()
	defer h.awaitedMu.Unlock()
	if ch, ok := h.awaited[e.Message]; ok {
		close(ch)
		delete(h.awaited, e.Message)
	}
	return nil
}

func testPolicy() Policy {
	p := DefaultPolicy()
	p.InitialBackoff, p.MaxBackoff, p.Jitter = 10*time.Millisecond, 50*time.Millisecond, 0
	return p
}

// startHarness runs a supervisor over the demo gateway with demoArgs in a
// fresh home and lock dir.
func startHarness(t *testing.T, policy Policy, demoArgs ...string) *harness {
	t.Helper()
	return startHarnessWith(t, func(c *Config) { c.Policy = policy }, demoArgs...)
}

// startHarnessWith is startHarness with the configuration changed by mutate.
func startHarnessWith(t *testing.T, mutate func(*Config), demoArgs ...string) *harness {
	t.Helper()
	h := newHome(t)
	h.run(mutate, demoArgs...)
	return h
}

// newHome makes an empty home and lock dir for a harness started later.
func newHome(t *testing.T) *harness {
	dir := testdir.New(t)
	h := &harness{
		t:      t,
		layout: lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")},
		clock:  &offsetClock{},
		states: make(chan *Status, 4096),
		done:   make(chan error, 1),
		prober: procstate.NewProber(procstate.Options{StartTolerance: -1}),
	}
	for _, d := range []string{h.layout.Home, h.layout.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) run(mutate func(*Config), demoArgs ...string) {
	h.t.Helper()
	cfg := Config{
		Command:        append([]string{os.Args[0], demogateway.Command}, demoArgs...),
		Env:            []string{"HERMES_HOME=" + h.layout.Home, "HERMES_GATEWAY_LOCK_DIR=" + h.layout.LockDir},
		Layout:         h.layout,
		Policy:         testPolicy(),
		StopTimeout:    10 * time.Second,
		ReadyTimeout:   30 * time.Second,
		ControlAddress: "",
		OnTransition: func(s *Status) {
			select {
			case h.states <- s:
			default:
				h.t.Error("transition observer overflowed")
			}
		},
	}
	mutate(&cfg)
	core, logs := observer.New(zapcore.DebugLevel)
	h.logs = logs
	sup, err := New(cfg, zap.New(zapcore.NewTee(zaptest.NewLogger(h.t).Core(), zapcore.RegisterHooks(core, h.hear))), h.clock, h.prober)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.sup, h.cancel = sup, cancel
	if h.prepare != nil {
		h.prepare(sup)
	}
	go func() { h.done <- sup.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			h.t.Error("supervisor did not stop")
		}
	})
}

// waitFor consumes transitions until one satisfies ok.
func (h *harness) waitFor(what string, ok func(*Status) bool) *Status {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-h.states:
			if ok(s) {
				return s
			}
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) waitState(st State) *Status {
	h.t.Helper()
	return h.waitFor(string(st), func(s *Status) bool { return s.State == st })
}

func (h *harness) waitReady() *Status {
	h.t.Helper()
	return h.waitFor("a ready gateway", func(s *Status) bool { return s.State == Running && s.Child != nil && s.Child.Ready })
}

func mustRecord(t *testing.T, path string) lockstore.Record {
	t.Helper()
	r, err := lockstore.ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitRecord reads path until it names pid, or until a deadline passes,
// and returns the last record read.
func waitRecord(t *testing.T, path string, pid int) lockstore.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := lockstore.ReadRecord(path)
		if (err == nil && r.PID == pid) || time.Now().After(deadline) {
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		time.Sleep(5 * time.Millisecond) // the gateway writes the record in another process: polled, bounded by the deadline above
	}
}

func TestSIGKILLTwentyTimes(t *testing.T) {
	h := startHarness(t, testPolicy())
	scoped := h.layout.ScopedLock(demogateway.Scope, "demo-token")
	prev := h.waitReady()
	seen := map[int]bool{prev.Child.PID: true}
	for i := 1; i <= 20; i++ {
		// A gateway killed after a healthy run must come straight back.
		h.clock.advance(2 * DefaultPolicy().ResetAfter)
		if err := killHard(prev.Child.PID); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		next := h.waitFor("the next ready gateway", func(s *Status) bool {
			if s.State == Backoff || s.State == Failed {
				t.Fatalf("kill %d: flapped into %s: %s", i, s.State, s.Reason)
			}
			return s.State == Running && s.Child != nil && s.Child.Ready
		})
		if seen[next.Child.PID] {
			t.Fatalf("kill %d: pid %d reported again", i, next.Child.PID)
		}
		seen[next.Child.PID] = true
		if next.Restarts != i || next.LastExit == nil || !killedHard(*next.LastExit) {
			t.Fatalf("kill %d: restarts %d, last exit %+v", i, next.Restarts, next.LastExit)
		}
		if r := mustRecord(t, h.layout.PIDFile()); r.PID != next.Child.PID {
			t.Fatalf("kill %d: gateway.pid names %d, child is %d", i, r.PID, next.Child.PID)
		}
		// The gateway writes its scoped lock after its pid file, which is
		// what "ready" waits for.
		if r := waitRecord(t, scoped, next.Child.PID); r.PID != next.Child.PID {
			t.Fatalf("kill %d: scoped lock names %d, child is %d", i, r.PID, next.Child.PID)
		}
		prev = next
	}
	leftovers, _ := filepath.Glob(filepath.Join(h.layout.LockDir, "*.stale"))
	if len(leftovers) > 0 {
		t.Fatalf("leftover files: %v", leftovers)
	}
	exitedInOrder(t, h.logs.All())
}

// TestLeftoversWaitForAStartWithTimeToSpare: a leftover of an interrupted
// write in the home, which no gateway reads, is swept before a start, but
// not on the path of a restart at once: it waits for the next start that
// is not, here one after a backoff.
func TestLeftoversWaitForAStartWithTimeToSpare(t *testing.T) {
	h := newHome(t)
	leave := func(name string) string {
		p := filepath.Join(h.layout.Home, name)
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := h.clock.Now().Add(-2 * lockstore.LeftoverAge)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := leave(".gateway_state_first.tmp")
	h.run(func(c *Config) { c.Policy = testPolicy() })
	prev := h.waitReady()
	later := leave(".gateway_state_later.tmp")
	next := func(what string) {
		if err := killHard(prev.Child.PID); err != nil {
			t.Fatal(err)
		}
		pid := prev.Child.PID
		prev = h.waitFor(what, func(s *Status) bool {
			return s.State == Running && s.Child != nil && s.Child.Ready && s.Child.PID != pid
		})
	}
	// After a healthy run: the first failure of a streak restarts at once.
	h.clock.advance(2 * DefaultPolicy().ResetAfter)
	next("the gateway restarted at once")
	if _, err := os.Lstat(later); err != nil {
		t.Fatalf("%s: %v; a restart at once swept it", later, err)
	}
	// The second failure of the streak waits InitialBackoff.
	next("the gateway started after a backoff")
	starts := 0
	swept := map[string]int{} // each leftover's line: after how many starts
	backoff := 0              // the start after which the backoff came
	for _, e := range h.logs.All() {
		f := e.ContextMap()
		switch {
		case e.Message == "state" && f["reason"] == "gateway started, waiting for it to be ready":
			starts++
		case e.Message == "state" && f["to"] == string(Backoff):
			backoff = starts
		case e.Message == "sweep" && f["action"] == string(lockstore.ActionSwept):
			swept[f["path"].(string)] = starts
		}
	}
	if backoff != 2 {
		t.Fatalf("backoff after start %d, want after start 2", backoff)
	}
	for p, want := range map[string]int{first: 0, later: 2} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: kept (%v), want it swept", p, err)
		}
		if got, ok := swept[p]; !ok || got != want {
			t.Errorf("%s: swept after start %d (logged: %v), want after start %d", p, got, ok, want)
		}
	}
}

// exitedInOrder checks that the line held back from the restart's path
// (lineHold) still reads in its place: each gateway's "gateway exited"
// comes after it started and before the release of its files and the
// next gateway's start.
func exitedInOrder(t *testing.T, logs []observer.LoggedEntry) {
	t.Helper()
	running := 0 // the pid of the last start not yet followed by its exit
	exits := 0
	for _, e := range logs {
		f := e.ContextMap()
		pid, _ := f["pid"].(int64)
		switch {
		case e.Message == "state" && f["reason"] == "gateway started, waiting for it to be ready":
			if running != 0 {
				t.Fatalf("gateway %d started before gateway %d's exit was logged", pid, running)
			}
			running = int(pid)
		case e.Message == "gateway exited":
			if int(pid) != running {
				t.Fatalf("exit of %d logged while %d ran", pid, running)
			}
			running = 0
			exits++
		case e.Message == "sweep" && f["reason"] == "released: its gateway exited" && running != 0:
			t.Fatalf("released gateway %d's %v before its exit was logged", running, f["path"])
		}
	}
	if exits == 0 {
		t.Fatal("no exit logged")
	}
}

func TestExit78Fails(t *testing.T) {
	h := startHarness(t, testPolicy(), "-exit-after", "1ms", "-exit-code", "78")
	st := h.waitState(Failed)
	if st.LastExit == nil || st.LastExit.Code != ExitConfig || !strings.Contains(st.Reason, "configuration error") {
		t.Fatalf("failed status: %+v, last exit %+v", st, st.LastExit)
	}
	if st.Restarts != 0 || st.Child != nil {
		t.Fatalf("restarted after 78: %+v", st)
	}
	// The failed state is persisted for shells without the endpoint.
	f, err := ReadStatusFile(h.layout.SupervisorState())
	if err != nil || f.State != Failed || !strings.Contains(f.Reason, "78") {
		t.Fatalf("state file: %+v, %v", f, err)
	}
}

func TestCrashLoopFails(t *testing.T) {
	p := testPolicy()
	p.CrashLoopMax = 4
	h := startHarness(t, p, "-exit-after", "1ms", "-exit-code", "1", "-no-cleanup")
	st := h.waitState(Failed)
	if !strings.Contains(st.Reason, "crash loop: 4 failures") || st.Restarts != 3 {
		t.Fatalf("status: %+v", st)
	}
	// Crashes leave files behind; the supervisor releases them every time.
	if _, err := os.Stat(h.layout.PIDFile()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("gateway.pid after crash loop: %v", err)
	}
}

func TestRestartCommandLeavesFailed(t *testing.T) {
	h := startHarness(t, testPolicy(), "-exit-after", "1ms", "-exit-code", "78")
	h.waitState(Failed)
	resp := h.sup.Do(context.Background(), "restart")
	if resp.Status == nil || resp.Status.Child == nil {
		t.Fatalf("restart answer: %+v", resp)
	}
	h.waitFor("a new start", func(s *Status) bool { return s.State == Starting && s.Child != nil })
}

func TestStopSendsMarkerAndSIGTERMAndKillsGrandchildren(t *testing.T) {
	gcFile := filepath.Join(testdir.New(t), "grandchild.pid")
	h := startHarness(t, testPolicy(), "-spawn-grandchild", "-grandchild-pid-file", gcFile)
	st := h.waitReady()
	// The demo gateway may report ready before it has written the
	// grandchild's pid: readiness also comes from gateway.pid alone,
	// written before the grandchild starts. Another process writes the
	// file and nothing tells the test, so it is polled, bounded below.
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); len(b) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the demo gateway never wrote the grandchild's pid")
		}
		b, _ = os.ReadFile(gcFile)
	}
	gcPID, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	gc, err := h.prober.Inspect(context.Background(), gcPID)
	if err != nil {
		t.Fatalf("grandchild %d: %v", gcPID, err)
	}
	resp := make(chan Response, 1)
	go func() { resp <- h.sup.Do(context.Background(), "stop") }()
	r := <-resp
	if !r.OK || r.Status.State != Stopped {
		t.Fatalf("stop answer: %+v", r)
	}
	// The demo gateway exits 0 only if it consumed a marker naming it on SIGTERM.
	if r.Status.LastExit == nil || r.Status.LastExit.Code != 0 {
		t.Fatalf("gateway did not record a planned stop: %+v", r.Status.LastExit)
	}
	if _, err := os.Stat(h.layout.PlannedStopMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker left behind: %v", err)
	}
	gs, err := lockstore.ReadState(h.layout.StateFile())
	if err != nil || gs.GatewayState != "stopped" {
		t.Fatalf("gateway_state.json: %+v, %v", gs, err)
	}
	// SIGKILL to its process group is sent before stop answers; the
	// kernel finishes the grandchild off asynchronously. It is no child
	// of the test's to wait for, so its verdict is polled, bounded below.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v := h.prober.Judge(context.Background(), gc, nil).Verdict
		if v.Stale() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the stop: %s", gcPID, v)
		}
	}
	if v := h.prober.Judge(context.Background(), st.Child.Identity(), nil).Verdict; !v.Stale() {
		t.Fatalf("gateway survived the stop: %s", v)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
		h.done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after stop")
	}
}

func TestStopTimeoutKillsTree(t *testing.T) {
	h := startHarnessWith(t, func(c *Config) { c.StopTimeout = 200 * time.Millisecond }, "-ignore-term")
	h.waitReady()
	r := h.sup.Do(context.Background(), "stop")
	if !r.OK || r.Status.State != Stopped {
		t.Fatalf("stop answer: %+v", r)
	}
	if e := r.Status.LastExit; e == nil || e.Signal != "SIGKILL" && e.Signal != killedByStopTimeout {
		t.Fatalf("a gateway ignoring SIGTERM must be killed after the stop timeout: %+v", e)
	}
	if _, err := os.Stat(h.layout.PIDFile()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("killed gateway's pid file not released: %v", err)
	}
	// It never consumed the stop's marker, which a later gateway must
	// not take for its own.
	if _, err := os.Stat(h.layout.PlannedStopMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stop's marker outlived the killed gateway: %v", err)
	}
}

// killHard kills pid the way the OOM killer or a power cut would: no
// warning, nothing cleaned up.
func killHard(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// A stop is answered just before Run returns and closes the endpoint,
// which ends the request's context: the answer given must reach the
// client, not "no answer in time", however the wait finds the two.
func TestAnAnswerGivenBeatsTheEndOfTheWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A plain select over both picks at random: 64 tries would all come
	// out right by chance once in 2^64.
	for i := range 64 {
		r := make(reply, 1)
		r <- Response{OK: true}
		if got := awaitAnswer(ctx, r); !got.OK {
			t.Fatalf("try %d: the answer given was lost to the ended wait: %+v", i, got)
		}
	}
	if got := awaitAnswer(ctx, make(reply, 1)); got.OK || !strings.HasPrefix(got.Error, "no answer in time") {
		t.Errorf("no answer and an ended wait = %+v; want no answer in time", got)
	}
}

// TestConfigSweepWorkers: zero (GOMAXPROCS) and a bound are taken; a
// negative bound is refused, naming the setting.
func TestConfigSweepWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers int
		bad     bool
	}{{0, false}, {2, false}, {-1, true}} {
		c := Config{
			Command:      []string{"hermes", "gateway", "run"},
			Layout:       lockstore.Layout{Home: "/h", LockDir: "/l"},
			StopTimeout:  time.Second,
			ReadyTimeout: time.Second,
			Policy:       DefaultPolicy(),
			SweepWorkers: tc.workers,
		}
		err := c.Validate()
		if tc.bad != (err != nil) || (err != nil && !strings.Contains(err.Error(), "sweep workers")) {
			t.Errorf("SweepWorkers %d: %v; want refused %v, naming sweep workers", tc.workers, err, tc.bad)
		}
	}
}

// TestSweepFanOutReachesTheStore: the supervisor's sweeps call
// Config.SweepFanOut when they go parallel, and give it back.
func TestSweepFanOutReachesTheStore(t *testing.T) {
	dir := testdir.New(t)
	l := lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks")}
	for _, d := range []string{l.Home, l.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Enough token locks for two goroutines; what they hold does not
	// matter to a dry run.
	for i := range 64 {
		if err := os.WriteFile(l.ScopedLock("telegram-bot-token", strconv.Itoa(i)), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var asked, given atomic.Int32
	cfg := Config{
		Command: []string{"fake-gateway"}, Layout: l, Policy: testPolicy(),
		StopTimeout: 10 * time.Second, ReadyTimeout: 30 * time.Second, Watchdog: WatchdogOff,
		SweepWorkers: 2,
		SweepFanOut:  func() func() { asked.Add(1); return func() { given.Add(1) } },
	}
	s, err := New(cfg, zaptest.NewLogger(t), SystemClock{}, procstate.NewProber(procstate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.Sweep(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 || given.Load() != 1 {
		t.Errorf("a sweep of 64 lock files on 2 goroutines asked for the fan-out %d times and gave it back %d times; want once each", asked.Load(), given.Load())
	}
}
