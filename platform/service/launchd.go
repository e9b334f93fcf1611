package service

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Launchd drives launchd: a LaunchAgent for the user (gui/<uid>), or a
// LaunchDaemon for the machine (system).
type Launchd struct {
	// Glob lists files matching a pattern; filepath.Glob when nil.
	Glob func(pattern string) ([]string, error)
	// Output runs a command and returns what it printed (launchctl
	// print); exec when nil.
	Output func(ctx context.Context, argv []string) ([]byte, error)
}

func launchdDir(c Config) string {
	if c.System {
		return "/Library/LaunchDaemons"
	}
	return filepath.Join(c.UserHome, "Library", "LaunchAgents")
}

// PlistPath is where the agent's definition goes.
func (Launchd) PlistPath(c Config) string {
	return filepath.Join(launchdDir(c), Label+".plist")
}

// LogDir is where launchd sends the supervisor's output.
func (Launchd) LogDir(c Config) string {
	if c.System {
		return "/Library/Logs/hermes-supervisor"
	}
	return filepath.Join(c.UserHome, "Library", "Logs", "hermes-supervisor")
}

func (Launchd) domain(c Config) string {
	if c.System {
		return "system"
	}
	return "gui/" + strconv.Itoa(c.UID)
}

func (l Launchd) target(c Config, label string) string { return l.domain(c) + "/" + label }

// Plist renders the definition. KeepAlive restarts the supervisor when it
// exits with an error but not after `hermes-supervisor stop` (exit 0);
// ExitTimeOut outlasts the supervisor's own stop timeout before launchd
// sends SIGKILL. It refuses a value no plist may hold (checkValues): XML
// 1.0 cannot carry most control characters at all, and an encoder would
// silently write another value in their place.
func (l Launchd) Plist(c Config) ([]byte, error) {
	if err := c.checkValues(); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", k) }
	str := func(indent, v string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlEscape(v)) }
	key("Label")
	str("\t", Label)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	args := runArgs(c)
	if c.System || c.UserHome != "" {
		// launchd never rotates StandardOutPath: the supervisor writes
		// its own log, rotated, and launchd's file keeps only what comes
		// before logging starts.
		args = append(args, "--log-file", filepath.Join(l.LogDir(c), "hermes-supervisor.log"))
	}
	for _, a := range args {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
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
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ThrottleInterval")
	b.WriteString("\t<integer>5</integer>\n")
	key("ExitTimeOut")
	fmt.Fprintf(&b, "\t<integer>%d</integer>\n", int((c.StopTimeout+stopGrace).Seconds()+0.999))
	// No ProcessType: Background throttles the supervisor and, inherited,
	// the gateway (CPU, I/O, timers, sockets); Hermes' own plist has none.
	if c.System && c.User != "" && c.User != "root" {
		key("UserName")
		str("\t", c.User)
	}
	// launchd expands no ~: an agent rendered for no user in particular
	// (deploy/) leaves its log to whoever installs it.
	if c.System || c.UserHome != "" {
		key("StandardOutPath")
		str("\t", filepath.Join(l.LogDir(c), "hermes-supervisor.stderr.log"))
		key("StandardErrorPath")
		str("\t", filepath.Join(l.LogDir(c), "hermes-supervisor.stderr.log"))
	}
	b.WriteString("</dict>\n</plist>\n")
	return []byte(b.String()), nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// hermesAgents finds Hermes' own gateway agents next to where ours goes.
func (l Launchd) hermesAgents(c Config) []string {
	return globSorted(l.Glob, filepath.Join(launchdDir(c), "ai.hermes.gateway*.plist"))
}

// Install writes the plist and loads it with `launchctl bootstrap` (not the
// legacy `load`), first unloading an older copy of ours.
func (l Launchd) Install(c Config, migrate bool) (Plan, error) {
	if err := c.validateInstall(true); err != nil {
		return Plan{}, err
	}
	var p Plan
	ours, others := ownedDefinitions(l.hermesAgents(c), c.Home, nil, func(b []byte) (string, bool) {
		return agentHome(b, filepath.Join(c.UserHome, ".hermes"))
	})
	for _, f := range others {
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own agent %s runs the gateway of another Hermes home (or cannot be read): left alone", strings.TrimSuffix(filepath.Base(f), ".plist")))
	}
	for _, f := range ours {
		label := strings.TrimSuffix(filepath.Base(f), ".plist")
		if migrate {
			p.Notes = append(p.Notes, fmt.Sprintf("unloading and disabling Hermes' own agent %s: hermes-supervisor now restarts the gateway", label))
			p.try("launchctl", "bootout", l.target(c, label))
			p.run("launchctl", "disable", l.target(c, label))
			continue
		}
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own agent %s also restarts the gateway of this home; two supervisors would fight over it: rerun with --migrate to unload and disable it", label))
	}
	if !c.System {
		p.do("check that the GUI domain "+l.domain(c)+" exists (a user agent needs a logged-in session)", func(ctx context.Context) error {
			return l.guiDomain(ctx, c)
		})
	}
	data, err := l.Plist(c)
	if err != nil {
		return Plan{}, err
	}
	p.noteOrigins(c)
	p.Steps = append(p.Steps, Step{Run: []string{"mkdir", "-p", l.LogDir(c)}})
	p.write(l.PlistPath(c), 0o644, data)
	p.try("launchctl", "bootout", l.target(c, Label))
	p.do("wait until `launchctl print "+l.target(c, Label)+"` shows the old job gone", func(ctx context.Context) error {
		return l.waitGone(ctx, c)
	})
	p.run("launchctl", "enable", l.target(c, Label))
	p.do(Join([]string{"launchctl", "bootstrap", l.domain(c), l.PlistPath(c)})+" (retried on errors 5 and 37)", func(ctx context.Context) error {
		return l.bootstrap(ctx, c)
	})
	l.waitRunning(&p, c)
	return p, nil
}

// Uninstall unloads the agent and removes its plist; the logs stay.
func (l Launchd) Uninstall(c Config) (Plan, error) {
	if err := c.Validate(true); err != nil {
		return Plan{}, err
	}
	var p Plan
	p.try("launchctl", "bootout", l.target(c, Label))
	p.remove(l.PlistPath(c))
	return p, nil
}

// Control starts, stops or restarts the loaded agent.
func (l Launchd) Control(c Config, verb string) (Plan, error) {
	var p Plan
	switch verb {
	case "start":
		p.run("launchctl", "kickstart", l.target(c, Label))
		l.waitRunning(&p, c)
	case "restart":
		p.run("launchctl", "kickstart", "-k", l.target(c, Label))
		l.waitRunning(&p, c)
	case "stop":
		// SIGTERM: the supervisor stops the gateway and exits 0, which
		// KeepAlive (SuccessfulExit=false) leaves stopped.
		p.run("launchctl", "kill", "SIGTERM", l.target(c, Label))
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
}

var plistHome = regexp.MustCompile(`<key>HERMES_HOME</key>\s*<string>([^<]*)</string>`)

// Installed lists the user's agent and the machine's daemon, where present.
func (l Launchd) Installed(c Config) []Definition {
	return installed(c, l.PlistPath, func(data []byte) string {
		if m := plistHome.FindSubmatch(data); m != nil {
			return html.UnescapeString(string(m[1]))
		}
		return ""
	})
}

// agentState is what `launchctl print` says of our job.
type agentState struct {
	State, PID, LastExit string
}

func (l Launchd) state(ctx context.Context, c Config) (agentState, error) {
	argv := []string{"launchctl", "print", l.target(c, Label)}
	var out []byte
	var err error
	if l.Output != nil {
		out, err = l.Output(ctx, argv)
	} else {
		out, err = exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	}
	if err != nil {
		return agentState{}, fmt.Errorf("%s: %w", Join(argv), err)
	}
	var a agentState
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " = ")
		if !ok {
			continue
		}
		switch k {
		case "state":
			a.State = v
		case "pid":
			a.PID = v
		case "last exit code":
			a.LastExit = v
		}
	}
	return a, nil
}

// waitRunning waits, when c.Wait is set, until launchd runs the supervisor
// and its gateway is ready: launchd has no readiness protocol, so the
// supervisor is asked (c.Ready); without that question, "running with the
// same pid a second later" stands for it. A supervisor that exits with an
// error ends the wait at once with its last log lines.
func (l Launchd) waitRunning(p *Plan, c Config) {
	p.wait(c, Label+" is running and its gateway ready", func(ctx context.Context) error {
		var now agentState
		var since time.Time
		var pid string
		var notReady error
		err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
			var err error
			if now, err = l.state(ctx, c); err != nil {
				return false, nil
			}
			switch {
			case now.State == "running" && now.PID != "" && now.PID == pid && c.Ready != nil:
				notReady = c.Ready(ctx)
				return notReady == nil, nil
			case now.State == "running" && now.PID != "" && now.PID == pid:
				return time.Since(since) >= time.Second, nil
			case now.State == "running":
				pid, since = now.PID, time.Now()
			case now.LastExit != "" && now.LastExit != "0" && pid != "":
				return false, l.notRunning(c, now, "")
			}
			return false, nil
		})
		if err != nil && ctx.Err() != nil {
			after := fmt.Sprintf(" after %v", c.Wait)
			if notReady != nil {
				after += fmt.Sprintf(", its gateway not ready (%v)", notReady)
			}
			return l.notRunning(c, now, after)
		}
		return err
	})
}

func (l Launchd) notRunning(c Config, a agentState, after string) error {
	log := filepath.Join(l.LogDir(c), "hermes-supervisor.log")
	lines := tailFile(log, 15)
	if lines == "" {
		// It died before it could log: launchd kept its stderr.
		log = filepath.Join(l.LogDir(c), "hermes-supervisor.stderr.log")
		lines = tailFile(log, 15)
	}
	if lines == "" {
		lines = "(none readable)"
	}
	return fmt.Errorf("%w: %s is %q (last exit code %s)%s; its last log lines:\n%s\nfix the cause (%s has more), then run `hermes-supervisor start`",
		ErrNotRunning, Label, a.State, a.LastExit, after, lines, log)
}

// output runs argv (launchctl) and returns what it printed.
func (l Launchd) output(ctx context.Context, argv []string) ([]byte, error) {
	if l.Output != nil {
		return l.Output(ctx, argv)
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// ErrNoGUISession reports a user agent installed where the user has no
// GUI session (SSH, a headless Mac): launchd has no gui/<uid> domain.
var ErrNoGUISession = errors.New("no GUI session for the user agent")

// guiDomain checks that gui/<uid> exists: over SSH or on a headless Mac
// it does not, bootstrap fails or the agent never starts.
func (l Launchd) guiDomain(ctx context.Context, c Config) error {
	if _, err := l.output(ctx, []string{"launchctl", "print", l.domain(c)}); err != nil {
		return fmt.Errorf("%w: launchd has no domain %s (logged in over SSH, or nobody is logged in at the Mac): install with --system, which runs the supervisor as a LaunchDaemon as you, or log in at the Mac first (%v)",
			ErrNoGUISession, l.domain(c), err)
	}
	return nil
}

// goneWait bounds the wait for a booted-out job to leave launchd.
const goneWait = 15 * time.Second

// waitGone waits until `launchctl print` no longer finds our job:
// bootout returns before launchd has torn the job down, and a bootstrap
// then fails with "Bootstrap failed: 5: Input/output error".
func (l Launchd) waitGone(ctx context.Context, c Config) error {
	ctx, cancel := context.WithTimeout(ctx, goneWait)
	defer cancel()
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := l.output(ctx, []string{"launchctl", "print", l.target(c, Label)})
		return err != nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s is still loaded %v after bootout: %w", Label, goneWait, err)
	}
	return nil
}

// bootstrapTries bounds the retries of a bootstrap that hits launchd's
// teardown race.
const bootstrapTries = 5

// bootstrap loads the plist, retrying errors 5 (EIO: the old job is still
// being torn down) and 37 (EALREADY: an operation on it is in progress),
// after waiting for the old job to go again.
func (l Launchd) bootstrap(ctx context.Context, c Config) error {
	argv := []string{"launchctl", "bootstrap", l.domain(c), l.PlistPath(c)}
	var err error
	for try := 1; try <= bootstrapTries; try++ {
		var out []byte
		out, err = l.output(ctx, argv)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("%s: %w: %s", Join(argv), err, strings.TrimSpace(string(out)))
		if code := exitCode(err); code != 5 && code != 37 {
			return err
		}
		if werr := l.waitGone(ctx, c); werr != nil {
			return errors.Join(err, werr)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(try) * 100 * time.Millisecond):
		}
	}
	return err
}

// exitCode is the exit status err carries, or -1.
func exitCode(err error) int {
	var e interface{ ExitCode() int }
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return -1
}
