package service

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SCM drives the Windows service control manager through its API. The
// service runs as the user who installs it, never as LocalSystem
// (docs/security.md), with the home, the gateway command and the PATH
// pinned; the control pipe also admits that user. Only Windows has one:
// elsewhere Install, Uninstall and Control fail with ErrUnsupported and
// Installed finds nothing.
type SCM struct{}

// Install creates (or updates) the service, sets its recovery actions and
// starts it.
func (m SCM) Install(c Config, migrate bool) (Plan, error) { return m.install(c, migrate) }

// Uninstall stops the service, waits until the SCM sees it stopped, and
// only then deletes it: a service deleted while it runs is only marked for
// deletion, and a reinstall fails until it is gone.
func (m SCM) Uninstall(c Config) (Plan, error) { return m.uninstall(c) }

// Control starts, stops or restarts the installed service.
func (m SCM) Control(c Config, verb string) (Plan, error) { return m.control(c, verb) }

// Installed lists the home's service (named for its profile, see
// NameFor), which is always the machine's, also to a user who is not an
// administrator.
func (m SCM) Installed(c Config) []Definition { return m.installed(c) }

// ErrMarkedForDelete reports a service the SCM has marked for deletion and
// keeps while something holds a handle to it.
var ErrMarkedForDelete = errors.New("the service is marked for deletion")

// ErrHomeOwner reports a Hermes home owned by another account than the one
// the Windows service would run as: an install from an over-the-shoulder
// UAC prompt, elevated as another administrator, runs the service as that
// administrator, with that administrator's files and rights.
var ErrHomeOwner = errors.New("the Hermes home belongs to another account than the service's")

// ErrLogon reports an account the Windows service manager could not log on
// as.
var ErrLogon = errors.New("the service manager could not log on with the account's password")

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

// checkCommandLine refuses a value of the service's command line that
// holds a %: the service manager keeps that line as an expandable string
// and replaces %NAME% with the variable's value when it starts the
// service, and nothing there escapes a %, so the supervisor would be given
// another home or binary than the one installed.
func (c Config) checkCommandLine() error {
	for _, v := range c.commandLineValues() {
		if i := strings.IndexByte(v.v, '%'); i >= 0 {
			return fmt.Errorf("%w: %s %s (from %s) holds a %% at byte %d, which the Windows service manager would expand as %%NAME%% on the service's command line: use a path without one",
				ErrUnsafeValue, v.what, strconv.Quote(v.v), v.from, i)
		}
	}
	return nil
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
