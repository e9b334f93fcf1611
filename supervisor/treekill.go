package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
)

// KillGrace is how long the supervisor waits for a killed gateway's tree
// to be gone before it gives up on what survived, says what that is, and
// completes the stop: a stop ends within its stop timeout plus KillGrace,
// always. It covers emptying a cgroup (5 s) and draining the output, and
// stays below the 15 s the service manager adds to the stop timeout.
const KillGrace = 10 * time.Second

// killTree kills the gateway's tree and arms the grace timer.
func (s *Supervisor) killTree(msg string, fields ...zap.Field) {
	s.log.Warn(msg, append(append(s.treeFields(), fields...), zap.Int("pid", s.child.PID))...)
	if err := s.run.Kill(); err != nil {
		s.log.Error("kill gateway", zap.Error(err))
	}
	if s.timers.grace == nil {
		s.timers.grace = s.clock.NewTimer(KillGrace)
	}
}

// graceOver gives up on a killed tree that is not gone after KillGrace:
// the run ends as if it had exited, naming every process left. Those keep
// the gateway's files, and no other gateway is started beside them.
func (s *Supervisor) graceOver(ctx context.Context) {
	s.timers.grace = nil
	if s.run == nil {
		return
	}
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
	s.exited(ctx, Exit{Code: -1, Signal: killedByStopTimeout, Unkilled: left, At: now, Uptime: now.Sub(s.child.StartedAt)})
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
