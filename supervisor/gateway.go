package supervisor

import (
	"context"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// findGateway returns the gateway that gateway.pid names when it is ours:
// our child itself, or a process of our child's tree (its job object on
// Windows, its process group on POSIX) whose start time is the one the
// record gives. pip's and uv's hermes.exe console launcher runs python.exe
// as its own child, so there the gateway is never our child's pid; Hermes
// consumes the planned-stop marker only when it names its own pid.
func (s *Supervisor) findGateway(ctx context.Context) (procstate.Identity, bool) {
	if s.child == nil {
		return procstate.Identity{}, false
	}
	rec, err := lockstore.ReadRecord(s.cfg.Layout.PIDFile())
	switch {
	case err != nil:
		return procstate.Identity{}, false
	case rec.PID == s.child.PID:
		return s.child.Identity(), true
	}
	st, ok := s.run.(*started)
	if !ok {
		// An adopted gateway was proven by its own pid.
		return procstate.Identity{}, false
	}
	if rec.StartTime == nil {
		return s.memberGateway(ctx, st, rec)
	}
	same := func() bool {
		l, err := s.prober.Look(ctx, rec.PID)
		return err == nil && procstate.StartTimesEqual(rec.StartTime, l, s.clock.Now())
	}
	if !st.tree.Holds(rec.PID, same) {
		return procstate.Identity{}, false
	}
	return rec.Identity(), true
}

// memberGateway finds the gateway of a record without a start time (a
// Hermes that could not read its own, psutil missing): where membership
// of our tree alone proves a process ours (a job object on Windows, which
// only our child's descendants can be in, asked holding a handle that
// keeps the pid from naming another), the gateway is the member the pid
// names, with the start time read from it then. A process group proves
// nothing alone, so on POSIX such a record finds no gateway.
func (s *Supervisor) memberGateway(ctx context.Context, st *started, rec lockstore.Record) (procstate.Identity, bool) {
	if !proctree.MembershipProvesOwnership {
		return procstate.Identity{}, false
	}
	id := rec.Identity()
	member := func() bool {
		if l, err := s.prober.Look(ctx, rec.PID); err == nil {
			id.StartTime = l.StartTime
		}
		return true
	}
	if !st.tree.Holds(rec.PID, member) {
		return procstate.Identity{}, false
	}
	return id, true
}

// gatewayID is whom the planned-stop marker, the lock listing and the
// release aim at: the gateway findGateway found, else our child.
func (s *Supervisor) gatewayID() procstate.Identity {
	if s.gateway != nil {
		return *s.gateway
	}
	return s.child.Identity()
}

// terminateGateway asks a gateway that is not our child itself to stop
// too (POSIX: a launcher need not forward SIGTERM), once it is proven
// again to be the one found.
func (s *Supervisor) terminateGateway(ctx context.Context) {
	st, ok := s.run.(*started)
	if !ok || s.gateway == nil || s.gateway.PID == s.child.PID {
		return
	}
	gw := *s.gateway
	same := func() bool {
		l, err := s.prober.Look(ctx, gw.PID)
		return err == nil && procstate.StartTimesEqual(gw.StartTime, l, s.clock.Now())
	}
	if err := st.tree.TerminateMember(gw.PID, same); err != nil {
		s.log.Warn("terminate gateway", zap.Int("pid", gw.PID), zap.Error(err))
	}
}
