package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
)

// Systemd drives systemd: a unit of our own, user or system.
type Systemd struct {
	// Glob lists files matching a pattern; filepath.Glob when nil. Tests
	// point the search for Hermes' own units at a temp dir through it.
	Glob func(pattern string) ([]string, error)
	// Output runs a command and returns what it printed (systemctl show,
	// journalctl); exec when nil.
	Output func(ctx context.Context, argv []string) ([]byte, error)
}

// UnitPath is where the unit goes: the user's unit dir or /etc.
func (Systemd) UnitPath(c Config) string {
	return filepath.Join(systemdUnitDir(c), c.name()+".service")
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
// brings back a crashed supervisor but not one stopped on purpose;
// Delegate=yes gives it the unit's cgroup to run each gateway in a child
// of its own, so that what a gateway leaves behind (a setsid helper) is
// killed when it exits, not only when the unit stops. It refuses a value
// no unit may hold (checkValues), and quotes every other word so that
// systemd parses back exactly the argv and environment meant.
func (Systemd) Unit(c Config) ([]byte, error) {
	if err := c.checkValues(); err != nil {
		return nil, err
	}
	// systemd strips the prefixes - @ + ! : from the first word after
	// unquoting it, so quoting cannot keep a leading + from running the
	// command as root: only an absolute path may start the line.
	if !strings.HasPrefix(c.Exe, "/") {
		return nil, fmt.Errorf("%w: the binary path %s (from %s) does not start with /: systemd would read a prefix from it", ErrUnsafeValue, strconv.Quote(c.Exe), c.Origins.Exe)
	}
	if strings.ContainsAny(c.Exe, `"'\`) {
		// systemd refuses such a program path ("Executable name contains
		// special characters", string_is_safe) and the unit would not load.
		return nil, fmt.Errorf("%w: the binary path %s (from %s) holds a quote or a backslash, which systemd does not take in the program it runs: install from a path without one", ErrUnsafeValue, strconv.Quote(c.Exe), c.Origins.Exe)
	}
	if c.User != "" && !systemdUserName.MatchString(c.User) {
		return nil, fmt.Errorf("%w: the service's user %s (from %s) is not a user name systemd takes literally in User=", ErrUnsafeValue, strconv.Quote(c.User), c.Origins.User)
	}
	var b strings.Builder
	if c.Home != "" {
		b.WriteString("# Written by `hermes-supervisor install`; `hermes-supervisor uninstall` removes it.\n")
	} else {
		// The packaged unit (deploy/): for no home in particular.
		b.WriteString("# hermes-supervisor's unit as `hermes-supervisor install` renders it, for no home in particular:\n")
		b.WriteString("# the supervisor takes the Hermes home and lock dir of the unit's user ($HOME) at run time, and\n")
		b.WriteString("# runs `hermes` from systemd's PATH unless ~/.hermes/hermes-supervisor.json sets \"command\".\n")
	}
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
	if c.Home != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("HERMES_HOME="+c.Home, false))
	}
	if c.Path != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("PATH="+c.Path, false))
	}
	if c.runsAsUser() {
		fmt.Fprintf(&b, "User=%s\n", c.User)
	}
	// Exit 78 (EX_CONFIG) is a refusal no restart can fix: a home or lock
	// dir another user controls. Restarting it every second helps no one.
	b.WriteString("Restart=on-failure\nRestartSec=1s\nRestartPreventExitStatus=78\n")
	b.WriteString("KillMode=mixed\nDelegate=yes\n")
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
	return []byte(b.String()), nil
}

// systemdUserName is what User= gets: systemd expands specifiers (%) in it
// and takes no quotes, so only a plain POSIX name is written.
var systemdUserName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.@-]*$`)

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
	if err := c.validateInstall(true); err != nil {
		return Plan{}, err
	}
	var p Plan
	ours, others := ownedDefinitions(s.hermesUnits(c), c.Home, nil, func(b []byte) (string, bool) {
		return hermesUnitHome(b, filepath.Join(c.UserHome, ".hermes"))
	})
	for _, u := range others {
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own unit %s runs the gateway of another Hermes home (or cannot be read): left alone", filepath.Base(u)))
	}
	for _, u := range ours {
		name := filepath.Base(u)
		if migrate {
			p.Notes = append(p.Notes, fmt.Sprintf("disabling Hermes' own unit %s: hermes-supervisor now restarts the gateway", name))
			p.try(s.systemctl(c, "disable", "--now", name)...)
			continue
		}
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own unit %s also restarts the gateway of this home; two supervisors would fight over it: rerun with --migrate to disable it", name))
	}
	// Hermes installs user units: a system service for a user (sudo
	// install --system) must deal with that user's too. Their manager is
	// reached as user@ (systemd 248 and later).
	if c.System && c.runsAsUser() && c.UserHome != "" {
		units := globSorted(s.Glob, filepath.Join(c.UserHome, ".config", "systemd", "user", "hermes-gateway*.service"))
		ours, _ := ownedDefinitions(units, c.Home, nil, func(b []byte) (string, bool) {
			return hermesUnitHome(b, filepath.Join(c.UserHome, ".hermes"))
		})
		for _, u := range ours {
			name := filepath.Base(u)
			if migrate {
				p.Notes = append(p.Notes, fmt.Sprintf("disabling %s's own Hermes unit %s: hermes-supervisor now restarts the gateway", c.User, name))
				p.try("systemctl", "--user", "--machine="+c.User+"@", "disable", "--now", name)
				continue
			}
			p.Notes = append(p.Notes, fmt.Sprintf("%s's own Hermes user unit %s also restarts the gateway of this home; two supervisors would fight over it: rerun with --migrate to disable it", c.User, name))
		}
	}
	unit, err := s.Unit(c)
	if err != nil {
		return Plan{}, err
	}
	p.noteOrigins(c)
	p.write(s.UnitPath(c), 0o644, unit)
	p.run(s.systemctl(c, "daemon-reload")...)
	p.run(s.systemctl(c, "enable", c.name()+".service")...)
	p.stopHermes(c, migrate)
	s.startAndWait(&p, c, "restart")
	if !c.System && !lingering(c) {
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
	p.try(s.systemctl(c, "disable", "--now", c.name()+".service")...)
	p.remove(s.UnitPath(c))
	p.run(s.systemctl(c, "daemon-reload")...)
	return p, nil
}

// Control starts, stops or restarts the installed service.
func (s Systemd) Control(c Config, verb string) (Plan, error) {
	var p Plan
	switch verb {
	case "start", "restart":
		s.startAndWait(&p, c, verb)
	case "stop":
		p.run(s.systemctl(c, "stop", c.name()+".service")...)
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
}

// lingering reports whether the installing user has lingering on (logind
// keeps one flag file per user name), so that their service runs without a
// login; false when it cannot tell.
func lingering(c Config) bool {
	// A plan is made without a context; the lookup bounds itself.
	u, err := passwd.LookupID(context.Background(), strconv.Itoa(c.UID))
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join("/var/lib/systemd/linger", u.Username))
	return err == nil
}

// Installed lists the user's and the machine's unit, where present.
func (s Systemd) Installed(c Config) []Definition { return installed(c, s.UnitPath, unitHome) }

// unitHome reads back the HERMES_HOME= our unit sets.
func unitHome(unit []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "Environment=")
		if !ok {
			continue
		}
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
		if h, ok := strings.CutPrefix(v, "HERMES_HOME="); ok {
			return strings.ReplaceAll(h, "%%", "%")
		}
	}
	return ""
}

// unitState is what `systemctl show` says of our unit.
type unitState struct {
	Active, Sub, Result, Status, Invocation string
	// MainPID is the last main process's pid, kept after it exits.
	MainPID int
}

func (u unitState) String() string {
	s := u.Active + "/" + u.Sub
	if u.Result != "" && u.Result != "success" {
		s += ", result " + u.Result
	}
	if u.Status != "" {
		s += ", status " + strconv.Quote(u.Status)
	}
	return s
}

func (s Systemd) output(ctx context.Context, argv []string) ([]byte, error) {
	if s.Output != nil {
		return s.Output(ctx, argv)
	}
	return Command(ctx, argv).Output()
}

func (s Systemd) state(ctx context.Context, c Config) (unitState, error) {
	out, err := s.output(ctx, s.systemctl(c, "show", "--property=ActiveState,SubState,Result,StatusText,InvocationID,ExecMainPID", c.name()+".service"))
	if err != nil {
		return unitState{}, fmt.Errorf("systemctl show %s: %w", c.name(), err)
	}
	var u unitState
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "ActiveState":
			u.Active = v
		case "SubState":
			u.Sub = v
		case "Result":
			u.Result = v
		case "StatusText":
			u.Status = v
		case "InvocationID":
			u.Invocation = v
		case "ExecMainPID":
			u.MainPID, _ = strconv.Atoi(v)
		}
	}
	return u, nil
}

// startAndWait starts (or restarts) the unit without blocking on it, then,
// when c.Wait is set, waits until systemd calls it active: with
// Type=notify that is after the supervisor's READY=1, once the gateway
// runs. A run that fails, or is being restarted after an exit, ends the
// wait at once with its last journal lines; only runs after our job count
// (a new InvocationID), so that neither the old run's "active" nor its
// "failed" is taken for the new one's.
func (s Systemd) startAndWait(p *Plan, c Config, verb string) {
	var before unitState
	if c.Wait > 0 {
		p.Steps = append(p.Steps, Step{What: "note which run of " + c.name() + ".service is current", MayFail: true,
			Do: func(ctx context.Context) (err error) { before, err = s.state(ctx, c); return err }})
	}
	p.run(s.systemctl(c, verb, "--no-block", c.name()+".service")...)
	p.wait(c, c.name()+".service is active (the gateway runs)", func(ctx context.Context) error {
		var now unitState
		err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
			var err error
			if now, err = s.state(ctx, c); err != nil {
				return false, nil
			}
			fresh := verb == "start" || now.Invocation != before.Invocation
			switch {
			case now.Active == "active" && fresh:
				return true, nil
			case now.Invocation != before.Invocation &&
				(now.Active == "failed" || now.Sub == "auto-restart" || now.Active == "inactive"):
				// A run of ours ended: the one before may have been
				// failed too, until our job ran.
				return false, s.notRunning(context.WithoutCancel(ctx), c, now, "")
			}
			return false, nil
		})
		if err != nil && ctx.Err() != nil {
			return s.notRunning(context.WithoutCancel(ctx), c, now, fmt.Sprintf(" after %v", c.Wait))
		}
		return err
	})
}

// notRunning builds the error for a unit that did not come up: its state,
// its last journal lines, and what to do.
func (s Systemd) notRunning(ctx context.Context, c Config, u unitState, after string) error {
	journal := []string{"journalctl", "--no-pager", "-n", "15", "-o", "short-iso", "-u", c.name() + ".service"}
	if !c.System {
		journal = []string{"journalctl", "--no-pager", "-n", "15", "-o", "short-iso", "--user-unit", c.name() + ".service"}
	}
	var ownLines string
	if u.MainPID > 0 {
		// The failed run's own last words (why it could not start) reach
		// journald over its stdout stream, often after systemd's note that
		// it exited: wait for them, or the lines shown would be of the run
		// before. They come within milliseconds on an idle machine; on a
		// loaded one journald has taken over 2 s (found by the repeated
		// make test runs), so the bound is generous: it only ever delays a
		// run that died without a word.
		own := []string{"journalctl", "--no-pager", "-q", "-o", "cat", "_PID=" + strconv.Itoa(u.MainPID)}
		wait, stop := context.WithTimeout(ctx, 10*time.Second)
		_ = poll(wait, 100*time.Millisecond, func() (bool, error) {
			out, err := s.output(wait, own)
			if err == nil && len(bytes.TrimSpace(out)) > 0 {
				ownLines = strings.TrimSpace(string(out))
				return true, nil
			}
			return false, nil
		})
		stop()
	}
	logs := "(none readable)"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if out, err := s.output(ctx, journal); err == nil && len(bytes.TrimSpace(out)) > 0 {
		logs = lastLines(string(out), 15)
	}
	// The unit's journal can lag its process's own lines under load: the
	// failed run's last words are shown whether or not it has caught up.
	if last := lastLines(ownLines, 1); ownLines != "" && !strings.Contains(logs, last) {
		logs += "\n" + lastLines(ownLines, 5)
	}
	return fmt.Errorf("%w: %s.service is %s%s; its last log lines:\n%s\nfix the cause (`%s` shows more), then run `%s`",
		ErrNotRunning, c.name(), u, after, logs, Join(append(journal[:1], journal[len(journal)-2:]...)), c.command("start"))
}

// systemdArgs joins a command line for ExecStart=. systemd expands
// variables in the arguments only: the program's path is executed as it
// reads, so a $ doubled there would name another file (status 203/EXEC).
func systemdArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = systemdQuote(a, i > 0)
	}
	return strings.Join(q, " ")
}

// systemdQuote quotes one word for a unit file so that systemd reads it
// back literally (systemd.syntax(7), systemd.service(5) "Command lines"):
// specifiers (%) are doubled everywhere, variables ($) only in the
// arguments of command lines (exec), where systemd expands them even
// inside quotes. A word of
// only safe characters is written as it is; any other is double-quoted,
// with \ and " escaped, and anything that is not a printable character
// (checkValues lets none through) C-escaped, so that a unit line stays one
// line whatever it is given.
func systemdQuote(s string, exec bool) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if exec {
		s = strings.ReplaceAll(s, "$", "$$")
	}
	if safeSystemdWord(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
			} else {
				b.WriteString(`\ufffd`)
			}
		case r < 0x80 && (r < ' ' || r == 0x7f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && (unsafeRune(r) || !unicode.IsPrint(r)):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
