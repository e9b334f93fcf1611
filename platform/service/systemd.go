package service

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Systemd drives systemd: a unit of our own, user or system.
type Systemd struct {
	// Glob lists files matching a pattern; filepath.Glob when nil. Tests
	// point the search for Hermes' own units at a temp dir through it.
	Glob func(pattern string) ([]string, error)
}

// UnitPath is where the unit goes: the user's unit dir or /etc.
func (Systemd) UnitPath(c Config) string {
	return filepath.Join(systemdUnitDir(c), Name+".service")
}

func systemdUnitDir(c Config) string {
	if c.System {
		return "/etc/systemd/system"
	}
	return filepath.Join(c.UserHome, ".config", "systemd", "user")
}

// Unit renders the unit file. The supervisor tells systemd it is ready
// (sd_notify) once the gateway has written its pid file; KillMode=mixed
// lets it stop the gateway itself on SIGTERM before systemd kills what is
// left; TimeoutStopSec outlasts its own stop timeout; Restart=on-failure
// brings back a crashed supervisor but not one stopped on purpose.
func (Systemd) Unit(c Config) []byte {
	var b strings.Builder
	b.WriteString("# Written by `hermes-supervisor install`; `hermes-supervisor uninstall` removes it.\n")
	b.WriteString("[Unit]\n")
	b.WriteString("Description=Hermes Agent gateway, supervised by hermes-supervisor\n")
	b.WriteString("Documentation=https://github.com/hermes-agent/hermes-supervisor\n")
	if c.System {
		b.WriteString("Wants=network-online.target\nAfter=network-online.target\n")
	}
	b.WriteString("StartLimitIntervalSec=0\n\n")
	b.WriteString("[Service]\n")
	b.WriteString("Type=notify\nNotifyAccess=main\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", systemdArgs(runArgs(c)))
	b.WriteString("ExecReload=/bin/kill -HUP $MAINPID\n")
	fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("HERMES_HOME="+c.Home, false))
	if c.Path != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("PATH="+c.Path, false))
	}
	if c.User != "" && c.User != "root" {
		fmt.Fprintf(&b, "User=%s\n", c.User)
	}
	b.WriteString("Restart=on-failure\nRestartSec=1s\n")
	b.WriteString("KillMode=mixed\n")
	b.WriteString("TimeoutStartSec=infinity\n")
	fmt.Fprintf(&b, "TimeoutStopSec=%d\n", int((c.StopTimeout+stopGrace).Seconds()+0.999))
	if c.Watchdog > 0 {
		fmt.Fprintf(&b, "WatchdogSec=%dms\n", max(1, c.Watchdog.Milliseconds()))
	}
	b.WriteString("\n[Install]\n")
	if c.System {
		b.WriteString("WantedBy=multi-user.target\n")
	} else {
		b.WriteString("WantedBy=default.target\n")
	}
	return []byte(b.String())
}

func (s Systemd) systemctl(c Config, args ...string) []string {
	if c.System {
		return append([]string{"systemctl"}, args...)
	}
	return append([]string{"systemctl", "--user"}, args...)
}

// hermesUnits finds Hermes' own gateway units next to where ours goes.
func (s Systemd) hermesUnits(c Config) []string {
	return globSorted(s.Glob, filepath.Join(systemdUnitDir(c), "hermes-gateway*.service"))
}

// Install writes the unit, disables Hermes' own units when asked, then
// enables and starts ours without waiting for the gateway to be ready.
func (s Systemd) Install(c Config, migrate bool) (Plan, error) {
	if err := c.Validate(true); err != nil {
		return Plan{}, err
	}
	var p Plan
	for _, u := range s.hermesUnits(c) {
		name := filepath.Base(u)
		if migrate {
			p.Notes = append(p.Notes, fmt.Sprintf("disabling Hermes' own unit %s: hermes-supervisor now restarts the gateway", name))
			p.try(s.systemctl(c, "disable", "--now", name)...)
			continue
		}
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own unit %s also restarts the gateway of this home; two supervisors would fight over it: rerun with --migrate to disable it", name))
	}
	p.write(s.UnitPath(c), 0o644, s.Unit(c))
	p.run(s.systemctl(c, "daemon-reload")...)
	p.run(s.systemctl(c, "enable", Name+".service")...)
	p.run(s.systemctl(c, "restart", "--no-block", Name+".service")...)
	if !c.System {
		p.Notes = append(p.Notes, "a user service stops at logout unless lingering is on: loginctl enable-linger")
	}
	return p, nil
}

// Uninstall stops and disables the service and removes its unit.
func (s Systemd) Uninstall(c Config) (Plan, error) {
	if err := c.Validate(true); err != nil {
		return Plan{}, err
	}
	var p Plan
	p.try(s.systemctl(c, "disable", "--now", Name+".service")...)
	p.remove(s.UnitPath(c))
	p.run(s.systemctl(c, "daemon-reload")...)
	return p, nil
}

// Control starts, stops or restarts the installed service.
func (s Systemd) Control(c Config, verb string) (Plan, error) {
	var p Plan
	switch verb {
	case "start", "restart":
		p.run(s.systemctl(c, verb, "--no-block", Name+".service")...)
	case "stop":
		p.run(s.systemctl(c, "stop", Name+".service")...)
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
}

// systemdArgs joins a command line for ExecStart=.
func systemdArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = systemdQuote(a, true)
	}
	return strings.Join(q, " ")
}

// systemdQuote quotes one word for a unit file so that it is taken
// literally: specifiers (%) are escaped everywhere, variables ($) only in
// command lines (exec), where systemd expands them; a word with spaces or
// quotes is double-quoted with C escapes.
func systemdQuote(s string, exec bool) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if exec {
		s = strings.ReplaceAll(s, "$", "$$")
	}
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return strconv.Quote(s)
}
