package service

import "time"

// hermesTask is the Scheduled Task Hermes installs to restart its gateway.
const hermesTask = "Hermes_Gateway"

// displayName is what the Services console lists the service of the home
// with suffix as: a named profile's says which profile it is.
func displayName(suffix string) string {
	if suffix == "" {
		return "Hermes supervisor"
	}
	return "Hermes supervisor (" + suffix + ")"
}

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
	if len(c.Command) > 0 && !c.Demo {
		// The service manager passes no PATH of the user's: the gateway
		// install found is pinned here, and `run` never falls back to
		// the demo as a service.
		args = append(append(args, "--"), c.Command...)
	}
	return args
}

// serviceSDDL is the service's DACL: Windows' default for a service
// (LocalSystem and Administrators in full, interactive and service
// users may query) plus the installing user, who may also start, stop and
// query it, so that `hermes-supervisor start` after a stop works without
// an elevated shell. installer is a SID string.
func serviceSDDL(installer string) string {
	const base = "D:(A;;CCLCSWRPWPDTLOCRRC;;;SY)(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;BA)(A;;CCLCSWLOCRRC;;;IU)(A;;CCLCSWLOCRRC;;;SU)"
	if installer == "" {
		return base
	}
	// CC query config, LC query status, SW enumerate dependents, RP
	// start, WP stop, LO interrogate, CR user-defined control, RC read.
	return base + "(A;;CCLCSWRPWPLOCRRC;;;" + installer + ")"
}
