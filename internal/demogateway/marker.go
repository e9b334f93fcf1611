package demogateway

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// consumePlannedStop reports whether a fresh planned-stop marker targets
// self and, if so, removes it, as Hermes does on SIGTERM (or, on Windows,
// from its marker-polling thread).
func consumePlannedStop(l lockstore.Layout, self procstate.Identity, now time.Time) (bool, error) {
	m, err := lockstore.ReadPlannedStop(l.PlannedStopMarker())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !m.Fresh(now) || m.TargetPID != self.PID {
		return false, nil
	}
	if m.TargetStartTime != nil && self.StartTime != nil && *m.TargetStartTime != *self.StartTime {
		return false, nil
	}
	if err := os.Remove(l.PlannedStopMarker()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, fmt.Errorf("consume %s: %w", l.PlannedStopMarker(), err)
	}
	return true, nil
}
