package service

import (
	"strings"
	"testing"
	"time"
)

// The SCM does not bound a stop: the wait for a stopped service is ours.
// It is what the running supervisor says its stop may take (StopWait,
// which the CLI fills in), not the stop timeout of whatever config the
// CLI read: a service installed with a longer one (the packaged script's
// -StopTimeout, install --config) would otherwise be given up on while it
// still stops. Uninstall waits the same.
func TestSCMStopWaitsWhatTheSupervisorSays(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stopWait time.Duration
		want     string
	}{
		{"the supervisor's budget", 6*time.Minute + 25*time.Second, "wait up to 6m25s"},
		{"none said: the stop timeout and grace", 0, "wait up to 25s"},
	} {
		c := Config{Exe: `C:\hermes-supervisor.exe`, Home: `C:\hermes`, StopTimeout: 10 * time.Second, StopWait: tc.stopWait}
		for _, verb := range []string{"stop", "restart"} {
			p, err := SCM{}.Control(c, verb)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) == 0 || !strings.Contains(p.Steps[0].What, tc.want) {
				t.Errorf("%s, %s: first step %q, want it to %s", tc.name, verb, p.Steps[0].What, tc.want)
			}
		}
		p, err := SCM{}.Uninstall(c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Steps[0].What, tc.want) {
			t.Errorf("%s, uninstall: first step %q, want it to %s", tc.name, p.Steps[0].What, tc.want)
		}
	}
}
