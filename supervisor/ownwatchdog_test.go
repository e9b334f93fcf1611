package supervisor

import (
	"testing"
	"time"
)

// With a watchdog of our own, the loop pings our service manager again and
// again, never sooner than OwnWatchdog after the ping before.
func TestOwnWatchdogPings(t *testing.T) {
	pings := make(chan time.Time, 64)
	h := startHarnessWith(t, func(c *Config) {
		c.OwnWatchdog = 20 * time.Millisecond
		c.Notify = func(msg string) {
			if msg == "WATCHDOG=1" {
				select {
				case pings <- time.Now():
				default:
				}
			}
		}
	})
	h.waitReady()
	var last time.Time
	for i := range 5 {
		select {
		case at := <-pings:
			if i > 0 && at.Sub(last) < 20*time.Millisecond {
				t.Fatalf("ping %d came %s after the one before, sooner than OwnWatchdog", i, at.Sub(last))
			}
			last = at
		case <-time.After(30 * time.Second):
			t.Fatalf("%d pings of our own, then none", i)
		}
	}
}
