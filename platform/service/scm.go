package service

import "time"

// hermesTask is the Scheduled Task Hermes installs to restart its gateway.
const hermesTask = "Hermes_Gateway"

// recoveryDelays are the SCM's recovery actions when the supervisor dies:
// restart it after 5 s, again after 10 s, then every 60 s; a day without
// failures (recoveryReset, in seconds) resets the count. Shared with the
// PowerShell script under deploy/windows.
var recoveryDelays = []time.Duration{5 * time.Second, 10 * time.Second, 60 * time.Second}

const recoveryReset = 24 * 60 * 60

// scmArgs is the service's command line after the binary; installer is
// the SID that may also use the control pipe.
func scmArgs(c Config, installer string) []string {
	args := append(runArgs(c)[1:], "--service")
	if installer != "" {
		args = append(args, "--control-user", installer)
	}
	return args
}
