package supervisor

// The stop path: the planned-stop marker and SIGTERM, the one stop
// deadline (extended by the gateway within --max-stop-extension), the
// kill of the tree when it passes, and the grace after which survivors
// are named.

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
	"go.uber.org/zap"
)

// terminate writes Hermes' planned-stop marker, so the gateway exits 0 and
// records `stopped`, then asks it to stop and sets the deadline.
func (s *Supervisor) terminate() {
	s.wd.silence()
	if s.gateway == nil {
		// Asked to stop before the gateway was found ready.
		if gw, ok := s.findGateway(context.Background()); ok && gw.PID != s.child.PID {
			s.gateway = &gw
		}
	}
	s.stopMarked = true
	if err := lockstore.WritePlannedStop(s.cfg.Layout, s.gatewayID(), s.self.PID, s.clock.Now()); err != nil {
		s.log.Warn("could not write the planned-stop marker; the gateway will record an unplanned stop", zap.Error(err))
	}
	if err := s.run.Terminate(); err != nil {
		s.log.Warn("terminate gateway", zap.Error(err))
	}
	s.terminateGateway(context.Background())
	at := s.clock.Now().Add(s.cfg.StopTimeout)
	s.stop = stopDeadline{killAt: at, ceiling: at.Add(s.cfg.MaxStopExtension)}
	s.setDeadline(s.cfg.StopTimeout)
}

// hangDetected takes a hung gateway down as a stop does, without the
// stop timeout, after asking it for its stacks. Its exit then counts as
// a failure with the reason ReasonWatchdog.
func (s *Supervisor) hangDetected(why string) {
	s.wd.judge()
	s.log.Error("gateway hung: "+why, zap.Int("pid", s.child.PID))
	s.fire(onHung, "gateway hung: "+why+"; taking it down")
}

func (s *Supervisor) takeDown() {
	if sig, ok := signals.Dump(); ok {
		if st, ok := s.run.(*started); ok && st.tree.Signal(sig) == nil {
			s.log.Warn("sent SIGUSR2: Hermes appends every thread's stack to its fault log; look there for where it hung",
				zap.String("file", filepath.Join(s.cfg.Layout.Home, "logs", "gateway_faulthandler.log")))
		}
	}
	if err := s.run.Terminate(); err != nil {
		s.log.Warn("terminate gateway", zap.Error(err))
	}
	s.stop = stopDeadline{hang: true}
	s.setDeadline(hangKillGrace)
}

// setDeadline arms the one deadline of a stop; what its passing means
// follows from the stop (see Run).
func (s *Supervisor) setDeadline(d time.Duration) {
	s.stopTimer(&s.deadline)
	s.deadline = s.clock.NewTimer(d)
}

// killTree kills the gateway's tree; the deadline then ends the wait for
// it after KillGrace.
func (s *Supervisor) killTree() {
	msg, fields := "killing the hung gateway's process tree", s.treeFields()
	if !s.stop.hang {
		msg = "gateway did not stop in time; killing its process tree"
		fields = append(fields, zap.Duration("stop_timeout", s.cfg.StopTimeout),
			zap.Duration("extended_by", s.stop.killAt.Sub(s.stop.ceiling.Add(-s.cfg.MaxStopExtension))))
	}
	s.log.Warn(msg, append(fields, zap.Int("pid", s.child.PID))...)
	if err := s.run.Kill(); err != nil {
		s.log.Error("kill gateway", zap.Error(err))
	}
	s.stop.killed = true
	s.setDeadline(KillGrace)
}

// graceOver gives up on a killed tree that is not gone after KillGrace:
// the run ends as if it had exited, naming every process left. Those keep
// the gateway's files, and no other gateway is started beside them.
func (s *Supervisor) graceOver() {
	left := s.run.survivors()
	if len(left) == 0 {
		// Everything died; the exit is being collected (the cgroup
		// emptied, the output drained) and will not be long.
		left = []proctree.Unkilled{{PID: s.child.PID, Why: fmt.Sprintf("its exit was not collected within %s of the kill", KillGrace)}}
	}
	for _, u := range left {
		s.log.Error("could not kill a process of the gateway's tree", zap.Int("pid", u.PID), zap.String("name", u.Name),
			zap.String("why", u.Why), zap.Duration("grace", KillGrace))
	}
	now := s.clock.Now()
	s.exited(Exit{Code: -1, Signal: killedByStopTimeout, Unkilled: left, At: now, Uptime: now.Sub(s.child.StartedAt)})
}

// DescribeUnkilled says in one line which processes survived a kill and
// why; names are quoted, since a process chooses its own.
func DescribeUnkilled(us []proctree.Unkilled) string {
	parts := make([]string, 0, len(us))
	for _, u := range us {
		parts = append(parts, fmt.Sprintf("pid %d %q: %s", u.PID, u.Name, u.Why))
	}
	return strings.Join(parts, "; ")
}

// extendStop honours EXTEND_TIMEOUT_USEC as systemd does: the stop's
// deadline becomes at least d from now, and the gateway must ask again
// before that passes. It never passes its ceiling, the stop timeout plus
// --max-stop-extension, however large d is.
func (s *Supervisor) extendStop(d time.Duration) {
	now := s.clock.Now()
	grant := min(d, max(s.stop.ceiling.Sub(now), 0)) // no now.Add(d): d may be 292 years
	until, capped := now.Add(grant), grant < d
	if capped {
		// The ceiling itself: now.Add(ceiling.Sub(now)) can differ from it
		// by the drift between the wall and monotonic clocks.
		until = s.stop.ceiling
	}
	if !until.After(s.stop.killAt) {
		if capped && !s.stop.capped {
			s.stop.capped = true
			s.log.Warn("the gateway asked to extend its stop beyond --max-stop-extension; its process tree is killed when the extended deadline passes",
				zap.Duration("asked", d), zap.Time("kill_at", s.stop.killAt), zap.Duration("max_stop_extension", s.cfg.MaxStopExtension))
		}
		return
	}
	s.setDeadline(grant)
	s.stop.killAt = until
	// Our own service manager would kill us, and with us the tree, at its
	// own stop timeout: it hears of the extension too (systemd honours
	// EXTEND_TIMEOUT_USEC from the main process while it stops).
	s.notify("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt((grant+ownStopGrace).Microseconds(), 10))
	fields := []zap.Field{zap.Duration("asked", d), zap.Time("kill_at", until), zap.Time("ceiling", s.stop.ceiling)}
	switch {
	case capped && !s.stop.capped:
		s.stop.capped, s.stop.extended = true, true
		s.log.Warn("the gateway extended its stop (EXTEND_TIMEOUT_USEC) by more than --max-stop-extension allows: its process tree is killed at the ceiling unless it exits first",
			append(fields, zap.Duration("max_stop_extension", s.cfg.MaxStopExtension))...)
	case !s.stop.extended:
		s.stop.extended = true
		s.log.Info("the gateway extended its stop (EXTEND_TIMEOUT_USEC): its process tree is killed at kill_at unless it exits or extends again, and never after the ceiling",
			fields...)
	default:
		// A draining gateway repeats it every few seconds: once is news.
		s.log.Debug("the gateway extended its stop again (EXTEND_TIMEOUT_USEC)", fields...)
	}
	s.publish()
}
