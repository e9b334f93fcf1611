package supervisor

import (
	"time"

	"go.uber.org/zap"
)

// timing records how long each step of a restart took, from the moment
// the gateway's exit was seen to the new gateway running, and logs it as
// one debug line ("restart timing"): the bench's restart breakdown reads
// it. It costs nothing unless debug logging is on.
type timing struct {
	last  time.Time
	steps []zap.Field
}

// newTiming starts a timing at t, or returns nil when log does not log
// at debug level.
func newTiming(log *zap.Logger, t time.Time) *timing {
	if t.IsZero() || !log.Core().Enabled(zap.DebugLevel) {
		return nil
	}
	return &timing{last: t}
}

// mark ends the step named name at t.
func (tm *timing) mark(name string, t time.Time) {
	if tm == nil || t.IsZero() {
		return
	}
	tm.steps = append(tm.steps, zap.Int64(name+"_us", t.Sub(tm.last).Microseconds()))
	tm.last = t
}

// restartAt starts the next step at t: what came before it since the
// last mark was not the restart's.
func (tm *timing) restartAt(t time.Time) {
	if tm != nil {
		tm.last = t
	}
}

// done logs the steps; the timing is used up.
func (tm *timing) done(log *zap.Logger, total time.Duration) {
	if tm == nil {
		return
	}
	log.Debug("restart timing", append(tm.steps, zap.Int64("total_us", total.Microseconds()))...)
}
