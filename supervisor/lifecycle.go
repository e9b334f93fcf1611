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

type exited struct {
	run  runner
	exit Exit
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
