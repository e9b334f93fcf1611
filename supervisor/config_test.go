package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// TestConfigSweepWorkers: zero (GOMAXPROCS) and a bound are taken; a
// negative bound is refused, naming the setting.
func TestConfigSweepWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers int
		bad     bool
	}{{0, false}, {2, false}, {-1, true}} {
		c := Config{
			Command:      []string{"hermes", "gateway", "run"},
			Layout:       lockstore.Layout{Home: "/h", LockDir: "/l"},
			StopTimeout:  time.Second,
			ReadyTimeout: time.Second,
			Policy:       DefaultPolicy(),
			SweepWorkers: tc.workers,
		}
		err := c.Validate()
		if tc.bad != (err != nil) || (err != nil && !strings.Contains(err.Error(), "sweep workers")) {
			t.Errorf("SweepWorkers %d: %v; want refused %v, naming sweep workers", tc.workers, err, tc.bad)
		}
	}
}
