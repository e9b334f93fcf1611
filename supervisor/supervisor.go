// Package supervisor owns the Hermes gateway as a child process: it sweeps
// stale files before every start, restarts the gateway with backoff, and
// releases the gateway's pid and lock files whenever it exits.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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
	bootID string
	nonce  string // in our gateways' environment; never written anywhere
	hashed string // the nonce's hash, kept in the state file
	prev   proof  // what the predecessor's state file proves; set by begin

	// Owned by the Run goroutine.
	state    State
	reason   string
	child    *Child
	run      runner
	gateway  *procstate.Identity // the child's gateway when not the child itself (see findGateway)
	hist     History
	restarts int
	blocked  int // consecutive starts refused by a foreign gateway
	// consecutive starts refused by an unusable home or lock dir, and why
	startFails   int
	startupError string
	homeSeen     bool // the home was usable once: its absence is a deletion
	hadChild     bool // a gateway ran before: the next start is a restart
	lastExit     *Exit
	nextStart    *time.Time
	shutdown     bool    // exit Run once stopped
	restart      bool    // start again once stopped
	waiters      []reply // answered once the pending stop/restart completes
	timers       loopTimers
	wd           watchdog
}

type loopTimers struct {
	backoff, kill, ready Timer
	grace                Timer // armed by a kill: when we stop waiting for the tree (KillGrace)
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
	bootID, err := platform.BootID()
	if err != nil {
		// Without it no later run can prove our gateway ours: it would be
		// left alone rather than reclaimed.
		log.Warn("cannot read the boot id; a successor will not reclaim our gateway", zap.Error(err))
	}
	nonce, hashed := newNonce()
	return &Supervisor{
		bootID: bootID,
		nonce:  nonce,
		hashed: hashed,
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
			s.killTree("gateway did not stop in time; killing its process tree",
				zap.Duration("stop_timeout", s.cfg.StopTimeout),
				zap.Duration("extended_by", s.wd.stopBy.Sub(s.wd.stopCeil.Add(-s.cfg.MaxStopExtension))))
		case <-timerC(s.timers.grace):
			s.graceOver(loopCtx)
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

// treeFields names the cgroup a kill of the gateway's tree takes down with
// it, and why it is ours, when it runs in one.
func (s *Supervisor) treeFields() []zap.Field {
	st, ok := s.run.(*started)
	if !ok || st.cgroup() == "" {
		return nil
	}
	return []zap.Field{zap.String("cgroup", st.cgroup()),
		zap.String("evidence", "the cgroup this supervisor created for this gateway, inside the cgroup delegated to it ("+st.evidence+")")}
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
			st.Locks, _ = s.store.Owned(ctx, s.gatewayID())
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
// or starts a fresh one. Only what the predecessor's state file lets us
// prove is touched (see proof): a state file of another boot, or without
// nonces, proves nothing, and what it names is left alone.
func (s *Supervisor) begin(ctx context.Context) {
	reclaimed := 0
	groups := map[int]bool{} // process groups of the predecessor's gateways
	prev, err := ReadStatusFile(s.cfg.Layout.SupervisorState())
	switch {
	case errors.Is(err, ErrNoState):
	case err != nil:
		s.log.Warn("ignoring unreadable supervisor state file", zap.Error(err))
	case s.bootID == "" || prev.BootID != s.bootID:
		if prev.Child != nil || prev.NonceHash != "" {
			s.log.Warn("the supervisor state file is from another boot, or names no boot; leaving the processes it names alone",
				zap.String("state_boot_id", prev.BootID), zap.String("boot_id", s.bootID), zap.Any("child", prev.Child))
		}
	default:
		s.prev = s.proofOf(prev)
		if c := prev.Child; c != nil {
			groups[c.PID] = true
			cp := s.proofFor(c.NonceHash)
			if _, err := cp.checkRecorded(ctx, c.Identity()); err == nil {
				o := newOrphan(c.Identity(), cp, s.log, s.clock, c.StartedAt, s.killHelpers)
				s.reclaim(ctx, o, *c, prev.Supervisor.PID)
				reclaimed = c.PID
			} else if !errors.Is(err, procstate.ErrNoProcess) {
				s.log.Warn("the gateway the state file names is not provably ours; leaving it alone", zap.Error(err))
			}
		}
	}
	// A predecessor killed between starting a gateway and recording it
	// leaves a gateway the state file does not name, but whose environment
	// carries the predecessor's nonce. Left alone it would block ours as
	// "foreign", or race it for the home. The oldest such gateway (its
	// command line is the one the predecessor launched, and it leads its
	// group) is stopped gently; another is killed with its group; helpers
	// in a gateway's group are killed one by one. A process with the nonce
	// outside those groups (a tmux or nohup the agent started) is not a
	// helper: it is left alone.
	carriers, err := s.prev.carriers(ctx)
	if err != nil {
		s.log.Warn("cannot look for gateways of a killed supervisor", zap.Error(err))
	}
	isGateway := func(c carrier) bool {
		return prev != nil && len(prev.Command) > 0 && slices.Equal(c.id.Argv, prev.Command) && c.pgid == c.id.PID
	}
	for _, c := range carriers {
		if !isGateway(c) || c.id.PID == reclaimed {
			continue
		}
		groups[c.id.PID] = true
		if reclaimed == 0 {
			o := newOrphan(c.id, s.prev, s.log, s.clock, s.clock.Now(), s.killHelpers)
			s.reclaim(ctx, o, Child{PID: c.id.PID, StartTime: c.id.StartTime, Argv: c.id.Argv, StartedAt: s.clock.Now(), NonceHash: c.hash}, prev.Supervisor.PID)
			reclaimed = c.id.PID
			continue
		}
		s.killProven(ctx, c, true, "a second gateway a previous supervisor of this home left running")
	}
	if prev != nil && prev.Child == nil {
		s.zombieGatewayGroups(ctx, carriers, groups)
	}
	for _, c := range carriers {
		switch {
		case isGateway(c) || c.id.PID == reclaimed:
		case groups[c.pgid]:
			s.killProven(ctx, c, false, "a helper a previous supervisor's gateway left running in its process group")
		default:
			s.log.Warn("a process started under a previous supervisor of this home runs outside its gateway's process group; leaving it alone",
				zap.Int("pid", c.id.PID), zap.Int("pgid", c.pgid), zap.Strings("argv", c.id.Argv))
		}
	}
	if reclaimed == 0 {
		s.start(ctx)
	}
}

// zombieGatewayGroups adds the group of a gateway that died as a zombie
// after its supervisor was killed between starting it and recording it
// (a gateway whose stderr pipe broke dies of SIGPIPE). The zombie's
// environment is gone, but it still holds its pid and start time, and the
// gateway is the ancestor of every process that carries the nonce: a
// zombie group leader that started no later than all of them is it. A
// leader already reaped proves nothing, and its group is left alone.
func (s *Supervisor) zombieGatewayGroups(ctx context.Context, carriers []carrier, groups map[int]bool) {
	if len(carriers) == 0 {
		return
	}
	first := *carriers[0].id.StartTime // carriers are sorted oldest first
	for _, c := range carriers {
		l := c.pgid
		if l <= 1 || l == c.id.PID || groups[l] {
			continue
		}
		obs := s.prober.Judge(ctx, procstate.Identity{PID: l}, nil)
		if obs.Verdict != procstate.Zombie || obs.Live.StartTime == nil || *obs.Live.StartTime > first {
			continue
		}
		s.log.Warn("the gateway of a killed supervisor died unrecorded; its helpers carry its nonce",
			zap.Int("pgid", l), zap.Int64p("leader_start_time", obs.Live.StartTime),
			zap.String("evidence", "zombie group leader that started before every process carrying the nonce"))
		groups[l] = true
	}
}

// proofOf collects the nonces a predecessor's state file vouches for.
func (s *Supervisor) proofOf(prev *Status) proof {
	var hashes []string
	for _, h := range []string{prev.NonceHash} {
		if h != "" {
			hashes = append(hashes, h)
		}
	}
	if prev.Child != nil && prev.Child.NonceHash != "" && !slices.Contains(hashes, prev.Child.NonceHash) {
		hashes = append(hashes, prev.Child.NonceHash)
	}
	return proof{prober: s.prober, self: s.self.PID, home: s.cfg.Layout.Home, hashes: hashes}
}

func (s *Supervisor) proofFor(hash string) proof {
	p := proof{prober: s.prober, self: s.self.PID, home: s.cfg.Layout.Home}
	if hash != "" {
		p.hashes = []string{hash}
	}
	return p
}

// killProven kills c (with its group when group is set and c leads it)
// after proving it once more, and logs the kill once with its evidence.
func (s *Supervisor) killProven(ctx context.Context, c carrier, group bool, what string) {
	again, err := s.prev.check(ctx, c.id.PID)
	if err != nil || !again.id.Same(c.id) {
		return // gone, or no longer the process we proved
	}
	s.log.Warn("killing "+what, zap.Int("pid", c.id.PID), zap.Int("pgid", c.pgid),
		zap.Int64p("start_time", c.id.StartTime), zap.Strings("argv", c.id.Argv),
		zap.String("evidence", "the previous supervisor's nonce and this HERMES_HOME in its environment; state file of this boot"))
	kill := platform.KillProcess
	if group {
		kill = platform.KillGroup
	}
	if err := kill(c.id.PID); err != nil {
		s.log.Warn("could not kill it", zap.Int("pid", c.id.PID), zap.Error(err))
	}
}

// killHelpers kills the proven processes left in the process group of a
// gateway of a previous supervisor that has exited. The group id cannot
// have been reused while they are in it, and each carries the nonce. It
// runs on the orphan's wait goroutine and only reads immutable fields.
func (s *Supervisor) killHelpers(ctx context.Context, pgid int) {
	carriers, err := s.prev.carriers(ctx)
	if err != nil {
		s.log.Warn("helpers of the old gateway may still run", zap.Int("pgid", pgid), zap.Error(err))
		return
	}
	for _, c := range carriers {
		if c.pgid == pgid {
			s.killProven(ctx, c, false, "a helper left by the previous supervisor's gateway after it exited")
		}
	}
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

// start sweeps stale files and starts the gateway, unless a live gateway
// we do not own holds the home.
func (s *Supervisor) start(ctx context.Context) {
	if err := s.probeDirs(); err != nil {
		s.startupFailed(err)
		return
	}
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
	// The nonce's hash reaches the state file before any process carries
	// the nonce: a successor can then prove the gateway even if we die
	// before recording it. A state file we cannot write is a start-up
	// failure: the gateway would be unprovable, and could not start well.
	s.startFails, s.startupError = 0, ""
	if _, err := s.persist(); err != nil {
		s.startupFailed(fmt.Errorf("%w: %w", errUnusableDir, err))
		return
	}
	cfg := s.cfg
	cfg.Env = append(slices.Clip(cfg.Env), EnvNonce+"="+s.nonce)
	cfg.Env = append(cfg.Env, s.openWatch()...)
	st, err := startChild(&cfg, s.self, s.log, s.clock)
	if err != nil {
		s.closeWatch(nil)
		e := Exit{Code: -1, StartError: err.Error(), At: s.clock.Now()}
		if fix, ok := neverStarts(err); ok && !s.hadChild {
			// Waiting cannot help a command that does not exist or may not
			// run: say so at once. Once a gateway has run, the same error
			// is more likely an upgrade in progress, and is retried.
			s.lastExit = &e
			s.transition(Failed, fmt.Sprintf("cannot start the gateway %q: %v: %s, then run `hermes-supervisor restart`", s.cfg.Command[0], err, fix))
			s.answer(Response{Error: s.reason, Status: s.snapshot()})
			return
		}
		s.afterExit(ctx, e)
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
	s.child = &Child{PID: id.PID, StartTime: id.StartTime, Argv: id.Argv, StartedAt: st.begun, NonceHash: s.hashed, Cgroup: st.cgroup()}
	s.run, s.gateway = st, nil
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
		// A run given up on (see graceOver) may end after Run returned.
		select {
		case s.events <- exited{run: r, exit: e}:
		case <-ctx.Done():
		}
	}()
}

// checkReady polls, with doubling intervals, for the gateway's own word
// that it is ready (see judgeReady); polling stops once it is, so a
// healthy gateway costs nothing.
func (s *Supervisor) checkReady() {
	if s.child == nil || s.state != Starting {
		return
	}
	// Under a launcher (pip's or uv's hermes.exe) the gateway is a child of
	// our child: readiness is judged for the process gateway.pid names once
	// it is proven to be in our tree.
	if gw, found := s.findGateway(context.Background()); found && gw.PID != s.child.PID {
		s.gateway = &gw
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
	s.stopTimer(&s.timers.grace)
	s.stopTimer(&s.timers.ready)
	run, gw := s.run, s.gatewayID()
	s.closeWatch(&e)
	s.run, s.child, s.gateway = nil, nil, nil
	s.lastExit = &e
	s.log.Info("gateway exited", zap.Int("pid", child.PID), zap.Stringer("exit", e),
		zap.Duration("uptime", e.Uptime))
	if o, ok := run.(*orphan); (!ok || !o.isAbandoned()) && len(e.Unkilled) == 0 {
		// A gateway that survived its kill still owns its files.
		s.release(ctx, child, gw)
	}
	if len(e.Unkilled) > 0 && !s.shutdown {
		s.transition(Failed, "the gateway's tree survived its kill ("+DescribeUnkilled(e.Unkilled)+
			"); not starting another beside it: end those processes, then run `hermes-supervisor restart`")
		s.answer(Response{Error: s.reason, Status: s.snapshot()})
		return
	}
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

// afterExit applies the restart policy to an exit nobody asked for. A
// gateway that died because its home or lock dir became unusable did not
// crash: that is a start-up failure, retried until the cause clears.
func (s *Supervisor) afterExit(ctx context.Context, e Exit) {
	if err := s.probeDirs(); err != nil {
		s.lastExit = &e
		s.startupFailed(err)
		return
	}
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

// release removes the files naming the child that just exited, and its
// gateway gw when that was another process: only their own records,
// matched by pid and start time.
func (s *Supervisor) release(ctx context.Context, c *Child, gw procstate.Identity) {
	ids := []procstate.Identity{c.Identity()}
	if gw.PID != c.PID {
		ids = append(ids, gw)
	}
	for _, id := range ids {
		if _, err := s.store.Release(ctx, id); err != nil {
			s.log.Warn("could not release the gateway's files", zap.Error(err))
		}
	}
	m, err := lockstore.ReadPlannedStop(s.cfg.Layout.PlannedStopMarker())
	if err == nil && (m.TargetPID == c.PID || m.TargetPID == gw.PID) && m.StopperPID == s.self.PID {
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
	if s.gateway == nil {
		// Asked to stop before the gateway was found ready.
		if gw, ok := s.findGateway(context.Background()); ok && gw.PID != s.child.PID {
			s.gateway = &gw
		}
	}
	if err := lockstore.WritePlannedStop(s.cfg.Layout, s.gatewayID(), s.self.PID, s.clock.Now()); err != nil {
		s.log.Warn("could not write the planned-stop marker; the gateway will record an unplanned stop", zap.Error(err))
	}
	if err := s.run.Terminate(); err != nil {
		s.log.Warn("terminate gateway", zap.Error(err))
	}
	s.terminateGateway(context.Background())
	s.timers.kill = s.clock.NewTimer(s.cfg.StopTimeout)
	s.wd.stopBy = s.clock.Now().Add(s.cfg.StopTimeout)
	s.wd.stopCeil = s.wd.stopBy.Add(s.cfg.MaxStopExtension)
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
	snap, _ := s.persist()
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(snap)
	}
}

// persist writes the state file, for shells that cannot reach the endpoint
// and for the successor that must prove our gateway ours.
func (s *Supervisor) persist() (*Status, error) {
	snap := s.snapshot()
	err := writeStatusFile(s.cfg.Layout.SupervisorState(), snap)
	if err != nil {
		s.log.Warn("could not write the supervisor state file", zap.Error(err))
	}
	return snap, err
}

func (s *Supervisor) snapshot() *Status {
	st := &Status{
		State:        s.state,
		Reason:       s.reason,
		Home:         s.cfg.Layout.Home,
		LockDir:      s.cfg.Layout.LockDir,
		Restarts:     s.restarts,
		LastExit:     s.lastExit,
		NextStart:    s.nextStart,
		UpdatedAt:    s.clock.Now(),
		Source:       "endpoint",
		BootID:       s.bootID,
		NonceHash:    s.hashed,
		StartupError: s.startupError,
		Command:      slices.Clone(s.cfg.Command),
	}
	st.ExternalSupervisor = s.cfg.ExternalSupervisor
	st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = s.self.PID, s.self.StartTime, s.self.Argv
	if s.child != nil {
		c := *s.child
		c.Argv = slices.Clone(c.Argv)
		s.describeWatch(&c)
		if gw := s.gateway; gw != nil && gw.PID != c.PID {
			c.Gateway = &Process{PID: gw.PID, StartTime: gw.StartTime}
		}
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
