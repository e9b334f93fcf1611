package supervisor

import (
	"go.uber.org/zap"
)

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
