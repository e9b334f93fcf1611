// Package supervisor owns the Hermes gateway as a child process: it sweeps
// stale files before every start, restarts the gateway with backoff, and
// releases the gateway's pid and lock files whenever it exits.
package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Supervisor runs one gateway. All of its state belongs to the goroutine
// in Run; other goroutines talk to it through events.
type Supervisor struct {
	cfg    Config
	log    *zap.Logger
	clock  Clock
	store  *lockstore.Store
	prober *procstate.Prober
	self   procstate.Identity
	events chan event
	rnd    func() float64

	// Owned by the Run goroutine.
	state     State
	reason    string
	child     *Child
	run       runner
	hist      History
	restarts  int
	blocked   int  // consecutive starts refused by a foreign gateway
	hadChild  bool // a gateway ran before: the next start is a restart
	lastExit  *Exit
	nextStart *time.Time
	shutdown  bool    // exit Run once stopped
	restart   bool    // start again once stopped
	waiters   []reply // answered once the pending stop/restart completes
	timers    loopTimers
	wd        watchdog
}

type loopTimers struct {
	backoff, kill, ready Timer
	readyPoll            time.Duration
}

// New prepares a supervisor; Run starts it.
func New(cfg Config, log *zap.Logger, clock Clock, prober *procstate.Prober) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid supervisor configuration: %w", err)
	}
	self, err := prober.Self(context.Background())
	if err != nil {
		return nil, fmt.Errorf("inspect own process: %w", err)
	}
	return &Supervisor{
		cfg:    cfg,
		log:    log,
		clock:  clock,
		prober: prober,
		store:  lockstore.New(cfg.Layout, prober, log, clock.Now).WithGatewayCommand(cfg.Command),
		self:   self,
		events: make(chan event, 16),
		rnd:    rand.Float64,
		state:  Stopped,
	}, nil
}

type event interface{ isEvent() }

type exited struct {
	run  runner
	exit Exit
}

type command struct {
	verb  string
	reply reply
}

type reply chan Response

func (exited) isEvent()  {}
func (command) isEvent() {}

// Run supervises until ctx is cancelled or a stop command arrives, then
// stops the gateway and returns. The caller holds the home's supervisor
// lock for as long as Run runs.
func (s *Supervisor) Run(ctx context.Context) error {
	if s.cfg.ControlAddress != "" {
		srv, err := listenControl(s.cfg.ControlAddress, s.cfg.ControlUsers, s.cfg.RequestTimeout, s.log, s.Do)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	loopCtx, cancelWaits := context.WithCancel(context.Background())
	defer cancelWaits()
	s.begin(loopCtx)
	s.feedOwn()
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			s.beginShutdown("supervisor asked to stop")
		case ev := <-s.events:
			s.handle(loopCtx, ev)
		case <-timerC(s.timers.backoff):
			s.timers.backoff = nil
			s.nextStart = nil
			s.start(loopCtx)
		case <-timerC(s.timers.kill):
			s.timers.kill = nil
			s.log.Warn("gateway did not stop in time; killing its process tree",
				zap.Duration("stop_timeout", s.cfg.StopTimeout), zap.Int("pid", s.child.PID))
			if err := s.run.Kill(); err != nil {
				s.log.Error("kill gateway", zap.Error(err))
			}
		case <-timerC(s.timers.ready):
			s.timers.ready = nil
			s.checkReady()
		case <-timerC(s.wd.check):
			s.checkHang()
		case <-timerC(s.wd.kill):
			s.killHung()
		case <-timerC(s.wd.own):
			s.feedOwn()
		}
		if s.shutdown && s.run == nil {
			s.answer(Response{OK: true, Status: s.snapshot()})
			return nil
		}
	}
}

func timerC(t Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// Do hands a command (status, stop or restart) to the Run goroutine and
// waits for the answer; stop and restart answer once they have completed.
func (s *Supervisor) Do(ctx context.Context, verb string) Response {
	r := make(reply, 1)
	select {
	case s.events <- command{verb: verb, reply: r}:
	case <-ctx.Done():
		return Response{Error: "supervisor busy: " + ctx.Err().Error()}
	}
	select {
	case resp := <-r:
		return resp
	case <-ctx.Done():
		return Response{Error: "no answer in time: " + ctx.Err().Error()}
	}
}

func (s *Supervisor) handle(ctx context.Context, ev event) {
	switch ev := ev.(type) {
	case exited:
		if ev.run != s.run {
			return
		}
		s.exited(ctx, ev.exit)
	case command:
		s.command(ctx, ev)
	case notifyEvent:
		s.onNotify(ev)
	case notifyRejected:
		s.onRejected(ev)
	case keepAliveMissed:
		s.onMissed(ev)
	}
}

func (s *Supervisor) command(ctx context.Context, c command) {
	switch c.verb {
	case "status":
		st := s.snapshot()
		if s.child != nil {
			st.Locks, _ = s.store.Owned(ctx, s.child.Identity())
		}
		c.reply <- Response{OK: true, Status: st}
	case "stop":
		s.waiters = append(s.waiters, c.reply)
		s.beginShutdown("stop requested")
	case "restart":
		if s.shutdown {
			c.reply <- Response{Error: "supervisor is shutting down"}
			return
		}
		s.waiters = append(s.waiters, c.reply)
		s.hist = History{}
		if s.run == nil {
			s.stopTimer(&s.timers.backoff)
			s.nextStart = nil
			s.start(ctx)
			return
		}
		s.restart = true
		s.stopChild("restart requested")
	default:
		c.reply <- Response{Error: fmt.Sprintf("unknown verb %q: use status, stop or restart", c.verb)}
	}
}

// begin runs once: it reclaims a gateway a killed predecessor left behind,
// or starts a fresh one.
func (s *Supervisor) begin(ctx context.Context) {
	reclaimed := 0
	prev, err := ReadStatusFile(s.cfg.Layout.SupervisorState())
	if err == nil && prev.Child != nil {
		id := prev.Child.Identity()
		o := &orphan{id: id, prober: s.prober, log: s.log, clock: s.clock, begun: prev.Child.StartedAt}
		if o.same() {
			s.reclaim(ctx, o, *prev.Child, prev.Supervisor.PID)
			reclaimed = id.PID
		} else {
			// The recorded gateway is gone, but a predecessor killed after
			// its gateway died and before it killed the gateway's process
			// group leaves helpers running that nothing else names.
			o.killLeftovers(ctx)
		}
	} else if err != nil && !errors.Is(err, ErrNoState) {
		s.log.Warn("ignoring unreadable supervisor state file", zap.Error(err))
	}
	// A predecessor killed between starting a gateway and recording it
	// leaves a gateway the state file does not name; left alone it would
	// block ours as "foreign", or race it for the home. The oldest group
	// leader among its processes is that gateway: it is stopped gently,
	// with its group. Anything else it left (helpers that outlived their
	// gateway, a second gateway) is killed.
	strays := s.strays(ctx)
	for _, o := range strays {
		if pg, err := platform.ProcessGroup(o.id.PID); reclaimed == 0 && err == nil && pg == o.id.PID {
			s.reclaim(ctx, o.orphan, Child{PID: o.id.PID, StartTime: o.id.StartTime, Argv: o.id.Argv, StartedAt: s.clock.Now()}, o.supervisor)
			reclaimed = o.id.PID
		}
	}
	for _, o := range strays {
		if pg, err := platform.ProcessGroup(o.id.PID); o.id.PID == reclaimed || (err == nil && pg == reclaimed) {
			continue
		}
		s.log.Warn("killing a process a previous supervisor of this home left running",
			zap.Int("pid", o.id.PID), zap.Strings("argv", o.id.Argv), zap.Int("previous_supervisor_pid", o.supervisor))
		if o.same() {
			if err := platform.KillGroup(o.id.PID); err != nil {
				s.log.Warn("could not kill it", zap.Int("pid", o.id.PID), zap.Error(err))
			}
		}
	}
	if reclaimed == 0 {
		s.start(ctx)
	}
}

// stray is a live process a dead supervisor of this home started.
type stray struct {
	*orphan
	supervisor int // the dead supervisor's pid, for the log
}

// strays lists, oldest first, the live processes that a dead supervisor of
// this home started, directly or through its gateway (see orphanOf). It
// runs once, at start-up, and reads every process's environment, which
// costs a few milliseconds.
func (s *Supervisor) strays(ctx context.Context) []stray {
	pids, err := s.prober.Pids(ctx)
	if err != nil {
		s.log.Warn("cannot look for gateways of a killed supervisor", zap.Error(err))
		return nil
	}
	var out []stray
	for _, pid := range pids {
		if pid == s.self.PID {
			continue
		}
		sup, ok := s.orphanOf(ctx, pid)
		if !ok {
			continue
		}
		id, err := s.prober.Inspect(ctx, pid)
		if err != nil || id.StartTime == nil {
			continue
		}
		out = append(out, stray{&orphan{id: id, prober: s.prober, log: s.log, clock: s.clock, begun: s.clock.Now()}, sup})
	}
	slices.SortFunc(out, func(a, b stray) int { return cmp.Compare(*a.id.StartTime, *b.id.StartTime) })
	return out
}

// reclaim stops a gateway a killed predecessor left running, then starts
// our own. Adopting it would leave us unable to wait(2) on it; stopping it
// cleanly costs one restart.
func (s *Supervisor) reclaim(ctx context.Context, o *orphan, c Child, prevSupervisor int) {
	s.log.Warn("found the gateway a previous supervisor left running; stopping it before starting a new one",
		zap.Int("pid", o.id.PID), zap.Int("previous_supervisor_pid", prevSupervisor))
	c.Adopted, c.Ready = true, true
	s.child, s.run, s.hadChild = &c, o, true
	s.watch(ctx, o)
	s.restart = true
	s.stopChild("stopping the gateway left by a previous supervisor")
}

// orphanOf reports whether pid was started, directly or through a
// gateway, by a supervisor of this home that is now dead. The proof is the
// process's own environment (EnvSupervisor and HERMES_HOME); a process
// whose environment cannot be read is never counted, so never touched.
func (s *Supervisor) orphanOf(ctx context.Context, pid int) (supervisorPID int, ok bool) {
	env, err := s.prober.Environ(ctx, pid)
	if err != nil {
		return 0, false
	}
	var tag, home string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvSupervisor:
			tag = v
		case "HERMES_HOME":
			home = v
		}
	}
	sup, ok := parseSupervisorTag(tag)
	if !ok || home != s.cfg.Layout.Home || sup.PID == s.self.PID {
		return 0, false
	}
	// Its supervisor lives: the process is that one's business.
	if !s.prober.Judge(ctx, sup, func([]string) bool { return true }).Verdict.Stale() {
		return 0, false
	}
	return sup.PID, true
}

// start sweeps stale files and starts the gateway, unless a live gateway
// we do not own holds the home.
func (s *Supervisor) start(ctx context.Context) {
	if _, err := s.store.Sweep(ctx, false); err != nil {
		s.log.Warn("some files could not be judged; starting anyway", zap.Error(err))
	}
	if owner, ok := s.foreignOwner(ctx); ok {
		s.blocked++
		delay := s.cfg.Policy.delay(s.blocked+1, s.rnd)
		s.scheduleStart(delay, fmt.Sprintf(
			"home is held by a live gateway not started by this supervisor (%s); stop it with `hermes gateway stop` and this supervisor takes over",
			owner))
		return
	}
	s.blocked = 0
	cfg := s.cfg
	cfg.Env = append(slices.Clip(cfg.Env), s.openWatch()...)
	st, err := startChild(&cfg, s.self, s.log, s.clock)
	if err != nil {
		s.closeWatch(nil)
		now := s.clock.Now()
		s.afterExit(ctx, Exit{Code: -1, StartError: err.Error(), At: now})
		return
	}
	id, err := s.prober.Inspect(ctx, st.tree.Pid())
	if err != nil {
		// It exited already; its exit event follows.
		id = procstate.Identity{PID: st.tree.Pid(), Argv: s.cfg.Command}
	}
	if len(id.Argv) == 0 {
		// Read between the kernel's point of no return in execve and the
		// new command line's set-up: what we asked for is what runs.
		id.Argv = slices.Clone(s.cfg.Command)
	}
	s.child = &Child{PID: id.PID, StartTime: id.StartTime, Argv: id.Argv, StartedAt: st.begun}
	s.run = st
	s.watch(ctx, st)
	s.watchStarted(st, id.PID)
	s.transition(Starting, "gateway started, waiting for it to be ready")
	s.timers.readyPoll = 5 * time.Millisecond
	s.timers.ready = s.clock.NewTimer(s.timers.readyPoll)
	s.restart = false
	if s.hadChild {
		s.restarts++
	}
	s.hadChild = true
	s.answer(Response{OK: true, Status: s.snapshot()})
}

// foreignOwner reports a live gateway, not ours, that holds the home, by
// the same rules the sweep applies.
func (s *Supervisor) foreignOwner(ctx context.Context) (string, bool) {
	e, ok := s.store.Running(ctx)
	switch {
	case !ok:
		return "", false
	case e.Kind == lockstore.KindRuntimeLock:
		return "gateway.lock is locked by another process", true
	case e.Record != nil:
		return fmt.Sprintf("gateway.pid names pid %d: %s", e.Record.PID, e.Reason), true
	}
	return e.Reason, true
}

func (s *Supervisor) watch(ctx context.Context, r runner) {
	go func() {
		e := r.wait(ctx)
		s.events <- exited{run: r, exit: e}
	}()
}

// checkReady polls, with doubling intervals, for the gateway's own word
// that it is ready (see judgeReady); polling stops once it is, so a
// healthy gateway costs nothing.
func (s *Supervisor) checkReady() {
	if s.child == nil || s.state != Starting {
		return
	}
	ready, by := s.judgeReady()
	timedOut := !s.clock.Now().Before(s.readyDeadline())
	if !ready && !timedOut {
		s.timers.readyPoll = min(2*s.timers.readyPoll, 500*time.Millisecond)
		s.timers.ready = s.clock.NewTimer(s.timers.readyPoll)
		return
	}
	if !ready {
		by = ""
	}
	s.markReady(by)
}

func (s *Supervisor) exited(ctx context.Context, e Exit) {
	child := s.child
	s.stopTimer(&s.timers.kill)
	s.stopTimer(&s.timers.ready)
	s.closeWatch(&e)
	s.run, s.child = nil, nil
	s.lastExit = &e
	s.log.Info("gateway exited", zap.Int("pid", child.PID), zap.Stringer("exit", e),
		zap.Duration("uptime", e.Uptime))
	s.release(ctx, child)
	// A hung gateway was taken down without a stop request: its exit is a
	// failure for the restart policy.
	if s.state == Stopping && (s.shutdown || s.restart) {
		switch {
		case s.shutdown:
			s.transition(Stopped, "stopped on request")
			s.answer(Response{OK: true, Status: s.snapshot()})
		case s.restart:
			s.start(ctx)
		}
		return
	}
	s.afterExit(ctx, e)
}

// afterExit applies the restart policy to an exit nobody asked for.
func (s *Supervisor) afterExit(ctx context.Context, e Exit) {
	d := s.cfg.Policy.Decide(&s.hist, e, s.rnd)
	if d.Verdict == Fail {
		s.lastExit = &e
		s.transition(Failed, d.Reason)
		s.answer(Response{Error: d.Reason, Status: s.snapshot()})
		return
	}
	if d.Delay <= 0 {
		s.start(ctx)
		return
	}
	s.scheduleStart(d.Delay, fmt.Sprintf("%s; restarting in %s", d.Reason, d.Delay.Round(time.Millisecond)))
}

func (s *Supervisor) scheduleStart(delay time.Duration, reason string) {
	at := s.clock.Now().Add(delay)
	s.nextStart = &at
	s.timers.backoff = s.clock.NewTimer(delay)
	s.transition(Backoff, reason)
}

// release removes the files naming the child that just exited: only its
// own records, matched by pid and start time.
func (s *Supervisor) release(ctx context.Context, c *Child) {
	if _, err := s.store.Release(ctx, c.Identity()); err != nil {
		s.log.Warn("could not release the gateway's files", zap.Error(err))
	}
	m, err := lockstore.ReadPlannedStop(s.cfg.Layout.PlannedStopMarker())
	if err == nil && m.TargetPID == c.PID && m.StopperPID == s.self.PID {
		// The gateway died before consuming our marker; a later gateway
		// must not mistake it for its own.
		if err := os.Remove(s.cfg.Layout.PlannedStopMarker()); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("remove planned-stop marker", zap.Error(err))
		}
	}
}

func (s *Supervisor) beginShutdown(reason string) {
	if s.shutdown {
		return
	}
	s.shutdown = true
	s.restart = false
	s.notify("STOPPING=1")
	s.stopTimer(&s.timers.backoff)
	s.nextStart = nil
	if s.run == nil {
		s.transition(Stopped, reason)
		return
	}
	s.stopChild(reason)
}

// stopChild writes Hermes' planned-stop marker, so the gateway exits 0 and
// records `stopped`, then asks it to stop and arms the kill timer.
func (s *Supervisor) stopChild(reason string) {
	if s.state == Stopping {
		return
	}
	s.transition(Stopping, reason)
	if err := lockstore.WritePlannedStop(s.cfg.Layout, s.child.Identity(), s.self.PID, s.clock.Now()); err != nil {
		s.log.Warn("could not write the planned-stop marker; the gateway will record an unplanned stop", zap.Error(err))
	}
	if err := s.run.Terminate(); err != nil {
		s.log.Warn("terminate gateway", zap.Error(err))
	}
	s.timers.kill = s.clock.NewTimer(s.cfg.StopTimeout)
	s.wd.stopBy = s.clock.Now().Add(s.cfg.StopTimeout)
}

func (s *Supervisor) stopTimer(t *Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// transition moves the state machine; each change is logged once and
// persisted for shells that cannot reach the endpoint.
func (s *Supervisor) transition(to State, reason string) {
	from := s.state
	if from == to && s.reason == reason {
		return
	}
	s.state, s.reason = to, reason
	fields := []zap.Field{zap.String("from", string(from)), zap.String("to", string(to)), zap.String("reason", reason)}
	if s.child != nil {
		fields = append(fields, zap.Int("pid", s.child.PID))
	}
	if to == Failed {
		s.log.Error("state", fields...)
	} else {
		s.log.Info("state", fields...)
	}
	snap := s.snapshot()
	if err := writeStatusFile(s.cfg.Layout.SupervisorState(), snap); err != nil {
		s.log.Warn("could not write the supervisor state file", zap.Error(err))
	}
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(snap)
	}
}

func (s *Supervisor) snapshot() *Status {
	st := &Status{
		State:     s.state,
		Reason:    s.reason,
		Home:      s.cfg.Layout.Home,
		LockDir:   s.cfg.Layout.LockDir,
		Restarts:  s.restarts,
		LastExit:  s.lastExit,
		NextStart: s.nextStart,
		UpdatedAt: s.clock.Now(),
		Source:    "endpoint",
	}
	st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = s.self.PID, s.self.StartTime, s.self.Argv
	if s.child != nil {
		c := *s.child
		c.Argv = slices.Clone(c.Argv)
		s.describeWatch(&c)
		st.Child = &c
	}
	return st
}

// answer completes the pending stop and restart requests.
func (s *Supervisor) answer(r Response) {
	for _, w := range s.waiters {
		w <- r
	}
	s.waiters = nil
}

func (s *Supervisor) notify(state string) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(state)
	}
}
