//go:build unix

package supervisor

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// selfStopChild runs testdata/hermes_selfstop.py, a gateway that says
// STOPPING=1 on its own and then does what mode says.
func selfStopChild(t *testing.T, mode ...string) func(*Config) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 runs these gateways:", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "hermes_selfstop.py"))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Command = append([]string{py, script}, mode...) }
}

// A gateway that says STOPPING=1 on its own (Hermes does on a /restart and
// a SIGUSR1 drain) has, as under systemd, the stop timeout to exit, and
// more only by EXTEND_TIMEOUT_USEC within --max-stop-extension. Before,
// STOPPING=1 turned hang detection off for good: a shutdown that wedged
// kept a gateway that served nobody "running" forever.
func TestGatewayThatSaysStoppingMustExit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      []string
		stop, ext time.Duration
		hung      bool
	}{
		{"a shutdown that hung is taken down", []string{"wedge"}, time.Second, time.Minute, true},
		{"a slow shutdown within the stop timeout is left alone", []string{"exit", "2"}, 6 * time.Second, 0, false},
		{"a shutdown extended as it drains is left alone", []string{"extend", "2.5"}, time.Second, time.Minute, false},
		{"extensions end at --max-stop-extension", []string{"extend", "forever"}, time.Second, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarnessWith(t, both(selfStopChild(t, tc.mode...), watchdogOf(200*time.Millisecond),
				func(c *Config) { c.StopTimeout, c.MaxStopExtension = tc.stop, tc.ext }))
			st := h.waitFor("an armed watchdog", armed)
			if !tc.hung {
				st = h.waitFor("the gateway's exit", func(s *Status) bool { return s.LastExit != nil })
				if e := st.LastExit; e.Code != 0 || e.Reason != "" || e.Signal != "" {
					t.Fatalf("last exit %+v: a gateway that exited in time was taken down", e)
				}
				return
			}
			next := h.waitHangRestart(st.Child.PID)
			// It had its stop timeout (and what it could extend) from its
			// STOPPING=1, and no endless wait after.
			if up, most := next.LastExit.Uptime, 2*tc.stop+tc.ext+5*time.Second; up < tc.stop || up > most {
				t.Fatalf("taken down after %s; want between the stop timeout %s and %s", up, tc.stop, most)
			}
		})
	}
}
