package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"go.uber.org/zap"
)

// act runs one action of a transition (see table).
func (s *Supervisor) act(a action, reason string) {
	ctx := s.loop
	switch a {
	case doStart:
		s.start(ctx)
	case doWait:
		s.timers.backoff = s.clock.NewTimer(s.nextStart.Sub(s.clock.Now()))
	case doShutdown:
		s.notify("STOPPING=1")
		s.stopTimer(&s.timers.guard)
	case doTerminate:
		s.terminate()
	case doTakeDown:
		s.takeDown()
	case doKill:
		s.killTree()
	case doAbandon:
		s.graceOver()
	case doDecide:
		s.afterExit(ctx, *s.lastExit)
	case doAnnounce:
		s.notify("READY=1")
	case doWatch:
		if s.state == Served {
			s.watchServer()
		}
		s.armGuard()
	}
}

// start sweeps stale files and starts the gateway, unless a live gateway
// we do not own holds the home. Its outcome is the next trigger.
func (s *Supervisor) start(ctx context.Context) {
	s.stopTimer(&s.timers.backoff)
	s.nextStart = nil
	// afterExit has just probed them when the policy restarts at once.
	atOnce := s.dirsProbed
	if !atOnce {
		if err := s.probeDirs(); err != nil {
			s.startupFailed(err)
			return
		}
	}
	s.dirsProbed = false
	if s.heldBack(ctx) {
		return
	}
	if err := s.checkActiveProfile(); err != nil {
		s.startupFailed(err)
		return
	}
	tm := s.timing
	tm.mark("decide", time.Now())
	var runs *lockstore.Entry
	s.whileBusy("sweeping the home and lock dir before a start", func() {
		// A restart at once, on the restart's path, leaves the leftovers
		// no gateway reads for a start with time to spare.
		sweep := s.store.SweepBeforeStart
		if atOnce {
			sweep = s.store.SweepBeforeRestart
		}
		sum, err := sweep(ctx, s.toRelease...)
		s.toRelease = nil
		if err != nil {
			s.log.Warn("some files could not be judged; starting anyway", zap.Error(err))
		}
		runs = sum.Running
	})
	tm.mark("sweep", time.Now())
	if why, ok := foreignOwner(runs); ok {
		s.blocked++
		delay := s.cfg.Policy.delay(s.blocked+1, s.rnd)
		s.scheduleStart(delay, why)
		return
	}
	s.blocked = 0
	tm.mark("foreign_owner", time.Now())
	// The nonce's hash reaches the state file before any process carries
	// the nonce: a successor can then prove the gateway even if we die
	// before recording it. A state file we cannot write is a start-up
	// failure: the gateway would be unprovable, and could not start well.
	// The nonce is one per supervisor and every write of the file holds
	// its hash, replacing the file whole (or not at all), so once one write
	// is durable the hash stays there: a restart writes nothing before the
	// fork. The file may then still name the gateway that exited until the
	// transition to starting records the new one; a successor killed in
	// between finds that one gone, and the new one by its nonce (begin).
	s.startFails, s.startupError = 0, ""
	if !s.hashDurable {
		if _, err := s.persistSynced(true); err != nil {
			s.startupFailed(fmt.Errorf("%w: %w", errUnusableDir, err))
			return
		}
	}
	tm.mark("persist", time.Now())
	cfg := s.cfg
	cfg.stdin = s.nullInput()
	cfg.out, s.spareOut = s.spareOut, nil
	cfg.outLimit = s.outLimit
	cfg.Env = append(slices.Clip(cfg.Env), EnvNonce+"="+s.nonce)
	cfg.Env = append(cfg.Env, s.wd.open()...)
	tm.mark("notify_socket", time.Now())
	st, err := s.spawn(&cfg, s.self, s.log, s.clock)
	tm.mark("spawn", time.Now())
	if err != nil {
		s.wd.close(nil)
		e := Exit{Code: -1, StartError: err.Error(), At: s.clock.Now()}
		if fix, ok := neverStarts(err); ok && !s.hadChild {
			// Waiting cannot help a command that does not exist or may not
			// run: say so at once. Once a gateway has run, the same error
			// is more likely an upgrade in progress, and is retried.
			s.lastExit = &e
			s.fire(onGiveUp, fmt.Sprintf("cannot start the gateway %q: %v: %s, then run `hermes-supervisor restart`", s.cfg.Command[0], err, fix))
			return
		}
		s.afterExit(ctx, e)
		return
	}
	s.run = st
	s.unsettled = &unsettled{st: st, timing: tm, forked: time.Now()}
	if s.settleAfter <= 0 {
		s.settle()
		return
	}
	s.timers.settle = s.clock.NewTimer(s.settleAfter)
}

// settleDelay is how long a new gateway has the machine to itself before
// the supervisor finishes its start (settle). Everything the supervisor
// did at the fork (reading /proc, five goroutines made, each waking a
// thread on the other CPU, the transition's log lines) ran beside the new
// process's own start-up, its loader and runtime: traced over 80 restarts
// of the bench's child on 2 CPUs, its exec to its first write took
// 2.02 ms under the supervisor and 1.79 ms under a bare fork/exec loop,
// and 1.77 ms once that work waited 3 ms (README, "Benchmarks"). A
// gateway that dies sooner is seen at the settle: it stays our unreaped
// child until its watch.
const settleDelay = 3 * time.Millisecond

// unsettled is a start whose second half (settle) is still to come.
type unsettled struct {
	st     spawned
	timing *timing
	forked time.Time // when the fork returned
}

// settle finishes the start under way, if any: it starts reading the new
// gateway's output, reads its identity, watches it and moves the machine
// to Starting. Nothing reads or moves the machine while a start is
// unsettled: fire, handle and statusNow settle it first, so whatever
// arrives in a new gateway's first milliseconds finds it fully started.
func (s *Supervisor) settle() {
	u := s.unsettled
	if u == nil {
		return
	}
	s.unsettled = nil
	s.stopTimer(&s.timers.settle)
	ctx, st, tm := s.loop, u.st, u.timing
	tm.restartAt(time.Now())
	st.begin()
	id, err := s.prober.Inspect(ctx, st.pid())
	if err != nil {
		// It exited already, and is unreaped until its watch sees it: its
		// exit event follows.
		id = procstate.Identity{PID: st.pid(), Argv: s.cfg.Command}
	}
	if len(id.Argv) == 0 {
		// Read between the kernel's point of no return in execve and the
		// new command line's set-up, or of a zombie: what we asked for is
		// what runs.
		id.Argv = slices.Clone(s.cfg.Command)
	}
	s.child = &Child{PID: id.PID, StartTime: id.StartTime, Argv: id.Argv, StartedAt: st.startedAt(), NonceHash: s.hashed, Cgroup: st.cgroup()}
	s.gateway = nil
	s.watch(ctx, st)
	s.wd.started(st, id.PID, s.events)
	s.timers.readyPoll = 5 * time.Millisecond
	s.timers.ready = s.clock.NewTimer(s.timers.readyPoll)
	if s.hadChild {
		s.restarts++
	}
	s.hadChild = true
	s.starting = true
	s.fire(onStarted, "gateway started, waiting for it to be ready")
	s.starting = false
	// The exit's line, held since the exit (Run does not flush it while a
	// start is unsettled), went out before the transition's; this covers
	// a logger that wrote neither.
	s.hold.flush()
	s.hold.resumeWrites()
	if tm != nil {
		tm.mark("settle", time.Now())
		tm.done(s.log, u.forked.Sub(s.lastExit.seen))
	}
}

// foreignOwner says why the home is held, given what the sweep just
// before the start found running there (nil for none): by which live
// gateway, ours having exited by now, or by a gateway_state.json that
// Hermes' own check raises on, which names no gateway to stop.
func foreignOwner(e *lockstore.Entry) (string, bool) {
	var who string
	switch {
	case e == nil:
		return "", false
	case e.Kind == lockstore.KindRuntimeLock:
		who = "gateway.lock is locked by another process"
	case e.Kind == lockstore.KindState && e.Record != nil:
		who = fmt.Sprintf("gateway_state.json names live gateway pid %d", e.Record.PID)
	case e.Kind == lockstore.KindState:
		return "home is held as Hermes' own rules read it: " + e.Reason, true
	case e.Record != nil:
		who = fmt.Sprintf("gateway.pid names pid %d: %s", e.Record.PID, e.Reason)
	default:
		who = e.Reason
	}
	return "home is held by a live gateway not started by this supervisor (" + who +
		"); stop it with `hermes gateway stop` and this supervisor takes over", true
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
	s.housekeep()
	// Under a launcher (pip's or uv's hermes.exe) the gateway is a child of
	// our child: readiness is judged for the process gateway.pid names once
	// it is proven to be in our tree.
	if gw, found := s.findGateway(context.Background()); found && gw.PID != s.child.PID {
		s.gateway = &gw
	}
	ready, by := s.wd.judgeReady(s.cfg.Layout, s.gatewayID().PID)
	timedOut := !s.clock.Now().Before(s.wd.readyDeadline(s.child.StartedAt, s.cfg.ReadyTimeout))
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

// exited ends a run: it releases the gateway's files and moves the machine
// by how the run ended.
func (s *Supervisor) exited(e Exit) {
	s.hold.pauseWrites()
	s.timing = newTiming(s.log, e.seen)
	s.timing.mark("tree_reaped", e.reaped)
	s.timing.mark("output_drained", e.drained)
	s.timing.mark("event", time.Now())
	child := s.child
	s.stopTimer(&s.deadline)
	s.stopTimer(&s.timers.ready)
	s.stop = stopDeadline{}
	run, gw := s.run, s.gatewayID()
	s.wd.close(&e)
	s.timing.mark("close_watch", time.Now())
	s.run, s.child, s.gateway = nil, nil, nil
	s.owned = ownedLocks{looking: s.owned.looking}
	marked := s.stopMarked
	s.stopMarked = false
	s.lastExit = &e
	s.hold.hold(s.log.Check(zap.InfoLevel, "gateway exited"), zap.Int("pid", child.PID), zap.Stringer("exit", e),
		zap.Duration("uptime", e.Uptime))
	// Unless a new gateway started at once (its housekeep closes them),
	// what the ended watch left is closed now.
	defer func() {
		if s.run == nil {
			s.wd.dropRetired()
		}
	}()
	if len(e.Unkilled) > 0 {
		// A gateway that survived its kill still owns its files.
		s.fire(onSurvived, "the gateway's tree survived its kill ("+DescribeUnkilled(e.Unkilled)+
			"); not starting another beside it: end those processes, then run `hermes-supervisor restart`")
		return
	}
	if o, ok := run.(*orphan); !ok || !o.isAbandoned() {
		// One opening of the home and lock dir serves the release and,
		// when the policy restarts at once, the sweep before the start,
		// which then releases the dead gateway's files in the same pass
		// (start). Any transition before that releases them first
		// (transition), so that no state is announced with them there.
		defer s.store.Hold()()
		if marked {
			s.releaseMarker(child, gw)
		}
		s.toRelease = releasable(child, gw)
		defer s.releasePending()
		s.timing.mark("release", time.Now())
	}
	s.fire(onExit, "the gateway exited")
	s.timing = nil // a restart that was not at once is not timed
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
	if s.refused(ctx, &e) {
		return
	}
	s.lastExit = &e
	d := s.cfg.Policy.Decide(&s.hist, e, s.rnd)
	if d.Verdict == Fail {
		s.lastExit = &e
		s.fire(onGiveUp, d.Reason)
		return
	}
	if d.Delay <= 0 {
		s.dirsProbed = true
		s.fire(onStartDue, d.Reason)
		s.dirsProbed = false
		return
	}
	s.scheduleStart(d.Delay, fmt.Sprintf("%s; restarting in %s", d.Reason, d.Delay.Round(time.Millisecond)))
}

// scheduleStart moves to Backoff: the next start is due after delay.
func (s *Supervisor) scheduleStart(delay time.Duration, reason string) {
	at := s.clock.Now().Add(delay)
	s.nextStart = &at
	s.fire(onRetryLater, reason)
}

// releasable names whose files an exit releases: the child that just
// exited, and its gateway gw when that was another process. Only their
// own records go, matched by pid and start time.
func releasable(c *Child, gw procstate.Identity) []procstate.Identity {
	ids := []procstate.Identity{c.Identity()}
	if gw.PID != c.PID {
		ids = append(ids, gw)
	}
	return ids
}

// releasePending releases the files of the gateways whose exit is being
// handled, unless the sweep of a start has.
func (s *Supervisor) releasePending() {
	for _, id := range s.toRelease {
		if _, err := s.store.Release(s.loop, id); err != nil {
			s.log.Warn("could not release the gateway's files", zap.Error(err))
		}
	}
	s.toRelease = nil
}

// releaseMarker removes our planned-stop marker for the exited gateway c
// (or gw, the gateway under its launcher), which it died before consuming.
func (s *Supervisor) releaseMarker(c *Child, gw procstate.Identity) {
	m, err := lockstore.ReadPlannedStop(s.cfg.Layout.PlannedStopMarker())
	if err == nil && (m.TargetPID == c.PID || m.TargetPID == gw.PID) && m.StopperPID == s.self.PID {
		// The gateway died before consuming our marker; a later gateway
		// must not mistake it for its own.
		if err := os.Remove(s.cfg.Layout.PlannedStopMarker()); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("remove planned-stop marker", zap.Error(err))
		}
	}
}

// stopDeadline is the stop under way: when its deadline kills the tree,
// how far the gateway may push that, and what was done.
type stopDeadline struct {
	killAt   time.Time // when the deadline kills (a stop's, not a hang's)
	ceiling  time.Time // the latest killAt: the stop timeout plus --max-stop-extension
	hang     bool      // a hang takedown: no drain, no extension
	killed   bool      // the tree was killed: the deadline ends the wait for it
	extended bool      // an extension of this stop was logged
	capped   bool      // an extension cut to the ceiling was logged
}

// KillGrace is how long the supervisor waits for a killed gateway's tree
// to be gone before it gives up on what survived, says what that is, and
// completes the stop: a stop ends within its stop timeout plus KillGrace,
// always. It covers emptying a cgroup (5 s) and draining the output, and
// stays below the 15 s the service manager adds to the stop timeout.
const KillGrace = 10 * time.Second

func (s *Supervisor) stopTimer(t *Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// housekeep writes the state file naming the new gateway, makes the next
// start's notify socket, alarm and output pipes, and closes what the last
// watch left,
// once the new gateway has had its first milliseconds: all of it is
// file-system work that, done at the fork, competed with the gateway's own
// start for the disk's journal and the second core. The first readiness
// poll (5 ms after the settle) or readiness itself, whichever is first,
// runs it; any other transition before then writes the file itself. A
// supervisor killed in those 8 ms leaves a gateway its state file does
// not name, which its successor finds by its nonce (begin).
func (s *Supervisor) housekeep() {
	if s.persistDue {
		_, _ = s.persist()
		s.persistDue = false
	}
	s.wd.prepare()
	if s.spareOut == nil {
		// Made here, not at the start: eight system calls off a restart.
		s.spareOut, _ = newOutputPipes()
	}
	s.wd.dropRetired()
}

// markReady moves a starting gateway to running; by says how readiness
// was judged, empty when it was not.
func (s *Supervisor) markReady(by string) {
	s.stopTimer(&s.timers.ready)
	s.housekeep()
	s.handovers = 0
	s.child.Ready, s.child.ReadyBy = by != "", by
	reason := "gateway is ready: " + by
	if by == "" {
		s.child.ReadyBy = "ready timeout"
		reason = fmt.Sprintf("no sign of readiness after %s; treating the gateway as running",
			s.wd.readyDeadline(s.child.StartedAt, s.cfg.ReadyTimeout).Sub(s.child.StartedAt).Round(time.Millisecond))
	}
	s.fire(onReady, reason)
	// A ready gateway holds its locks: what status names is read now, off
	// the loop.
	s.lookUpOwned(s.gatewayID())
}

// heed does what the watchdog asks.
func (s *Supervisor) heed(a watchAction) {
	if a.extend != nil {
		switch {
		case s.state == Starting:
			s.wd.extendReady(*a.extend)
		case s.state == Stopping && s.deadline != nil && !s.stop.killed && !s.stop.hang:
			s.extendStop(*a.extend)
		}
	}
	switch {
	case a.hung != "":
		s.hangDetected(a.hung)
	case a.ready != "" && s.state == Starting:
		s.markReady(a.ready)
	case a.publish:
		s.publish()
	}
}

// ownStopGrace is what our own service manager waits beyond our stop
// timeout (platform/service's stopGrace): an extension we pass up keeps
// that margin.
const ownStopGrace = 15 * time.Second

// nullInput is /dev/null, opened once for every gateway's stdin: exec
// would open and close it on each start's path. nil if it cannot be
// opened, and exec then tries itself (and says why it failed).
func (s *Supervisor) nullInput() *os.File {
	if s.devNull == nil {
		s.devNull, _ = os.Open(os.DevNull)
	}
	return s.devNull
}
