package service

// The launchd plist: what Plist renders, and the limits of launchd it
// works within.

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Plist renders the definition. KeepAlive restarts the supervisor when it
// exits with an error but not after `hermes-supervisor stop` (exit 0);
// ExitTimeOut outlasts the supervisor's own stop timeout before launchd
// sends SIGKILL (for a user agent both fit launchd's limit, agentExitLimit).
// It refuses a value no plist may hold (checkValues): XML 1.0 cannot carry
// most control characters at all, and an encoder would silently write
// another value in their place.
func (l Launchd) Plist(c Config) ([]byte, error) {
	if err := c.checkValues(); err != nil {
		return nil, err
	}
	c = agentTimeouts(c)
	var b strings.Builder
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", k) }
	str := func(indent, v string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlEscape(v)) }
	key("Label")
	str("\t", c.label())
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	// The gateway's command is not pinned here: `run` chooses it (and the
	// flags Hermes' updater looks for), as under every other manager.
	args := runArgs(c)
	if c.System || c.UserHome != "" {
		// launchd never rotates StandardOutPath: the supervisor writes
		// its own log, rotated, and launchd's file keeps only what comes
		// before logging starts.
		args = append(args, "--log-file", filepath.Join(l.LogDir(c), c.name()+".log"))
	}
	for _, a := range args {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	if c.Home != "" {
		// launchd starts a job in /, Hermes pins its home; a relative
		// path in the gateway's config then means the same under both.
		key("WorkingDirectory")
		str("\t", c.Home)
	}
	if c.Home != "" || c.Path != "" {
		key("EnvironmentVariables")
		b.WriteString("\t<dict>\n")
		if c.Home != "" {
			b.WriteString("\t\t<key>HERMES_HOME</key>\n")
			str("\t\t", c.Home)
		}
		if c.Path != "" {
			b.WriteString("\t\t<key>PATH</key>\n")
			str("\t\t", c.Path)
		}
		b.WriteString("\t</dict>\n")
	}
	if !c.System {
		// Aqua is a GUI login; Background is user/<uid>, where install
		// loads the agent over SSH or with nobody logged in at the Mac,
		// as Hermes does. Without Background, bootstrap there refuses it.
		key("LimitLoadToSessionType")
		b.WriteString("\t<array>\n\t\t<string>Aqua</string>\n\t\t<string>Background</string>\n\t</array>\n")
	}
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	// launchd restarts the supervisor, never the gateway: the supervisor's
	// own backoff and crash-loop `failed` state (which keeps it running)
	// pace the gateway. Hermes' 30 s guards a crash-looping gateway that
	// launchd restarts itself; here launchd restarts only a supervisor
	// that exits with an error (a lock held elsewhere, a broken config),
	// after 5 s (launchd's default is 10 s; our systemd unit waits 1 s).
	key("ThrottleInterval")
	fmt.Fprintf(&b, "\t<integer>%d</integer>\n", int(agentThrottle.Seconds()))
	key("ExitTimeOut")
	fmt.Fprintf(&b, "\t<integer>%d</integer>\n", exitTimeOut(c))
	// launchd's default soft limit on open files is 256, which a gateway
	// with many platform connections exhausts (EMFILE); Hermes' plist sets
	// its runtime.nofile_soft_limit default. Go raises the supervisor's own
	// limit but restores this one for the gateway it starts.
	key("SoftResourceLimits")
	fmt.Fprintf(&b, "\t<dict>\n\t\t<key>NumberOfFiles</key>\n\t\t<integer>%d</integer>\n\t</dict>\n", agentNoFile)
	// No ProcessType: Background throttles the supervisor and, inherited,
	// the gateway (CPU, I/O, timers, sockets); Hermes' own plist has none.
	if c.System && c.runsAsUser() {
		key("UserName")
		str("\t", c.User)
	}
	// launchd expands no ~: an agent rendered for no user in particular
	// (deploy/) leaves its log to whoever installs it.
	if c.System || c.UserHome != "" {
		key("StandardOutPath")
		str("\t", filepath.Join(l.LogDir(c), c.name()+".stderr.log"))
		key("StandardErrorPath")
		str("\t", filepath.Join(l.LogDir(c), c.name()+".stderr.log"))
	}
	b.WriteString("</dict>\n</plist>\n")
	return []byte(b.String()), nil
}

// agentThrottle is the plist's ThrottleInterval (see Plist).
const agentThrottle = 5 * time.Second

// agentNoFile is the plist's soft limit on open files: Hermes' default
// runtime.nofile_soft_limit.
const agentNoFile = 4096

// agentExitLimit is the longest ExitTimeOut launchd honours for a user
// agent (Hermes documents the clamp): a longer one is cut to it, and the
// supervisor would be killed before its own stop timeout ran out.
const agentExitLimit = 60 * time.Second

// agentTimeouts fits a user agent's stop timeout under agentExitLimit,
// keeping stopGrace for the supervisor to take the gateway's tree down.
func agentTimeouts(c Config) Config {
	if !c.System && c.StopTimeout+stopGrace > agentExitLimit {
		c.StopTimeout = agentExitLimit - stopGrace
	}
	return c
}

// exitTimeOut is the plist's ExitTimeOut in seconds for c (after
// agentTimeouts).
func exitTimeOut(c Config) int {
	return int((c.StopTimeout + stopGrace).Seconds() + 0.999)
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
