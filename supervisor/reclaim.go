package supervisor

import (
	"context"
	"errors"
	"slices"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"

	"github.com/hermes-agent/hermes-supervisor/procstate"
	"go.uber.org/zap"
)

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
	case prev.Supervisor.PID != s.self.PID && !s.provenGone(ctx, prev):
		// Its lock file was unlinked under it (LockHome refuses this
		// case; a caller without LockHome gets here): its gateway is a
		// live supervisor's, not an orphan.
		s.log.Warn("the supervisor the state file names still runs; leaving its gateway alone",
			zap.Int("previous_supervisor_pid", prev.Supervisor.PID))
		prev = nil
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
	// A gateway started but never recorded: the file names none, or one
	// that is gone (a restart does not rewrite the file before the fork,
	// only after it; see start).
	if prev != nil && (prev.Child == nil || reclaimed != prev.Child.PID) {
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
		s.fire(onStartDue, "supervisor started")
	}
}

// provenGone reports whether the supervisor prev names is gone: dead, a
// zombie, or its pid now another process (start time, command line). One
// that cannot be inspected, or is stopped, is not.
func (s *Supervisor) provenGone(ctx context.Context, prev *Status) bool {
	self, argvEqual := prev.supervisorSelf()
	return s.prober.Liveness(ctx, self, argvEqual).Verdict.Gone()
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
	kill := proctree.KillProcess
	if group {
		kill = proctree.KillGroup
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
	s.fire(onReclaim, "stopping the gateway left by a previous supervisor")
}
