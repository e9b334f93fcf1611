package service

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"howett.net/plist"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
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
	return filepath.Join(launchdDir(c), c.label()+".plist")
}

// LogDir is where the supervisor writes its log and launchd its output:
// the user's ~/Library/Logs/hermes-supervisor, or
// /Library/Logs/hermes-supervisor for a daemon that runs as root. A
// daemon that runs as a user (sudo install --system) logs in that user's
// directory too: launchd opens StandardErrorPath as the job's user (it
// becomes the user first), and the supervisor rotates its log by renames
// in the directory, so a directory root made would refuse both, and the
// supervisor, unable to open its log, would exit at every start.
func (Launchd) LogDir(c Config) string {
	if c.System && !c.runsAsUser() {
		return "/Library/Logs/hermes-supervisor"
	}
	return filepath.Join(c.UserHome, "Library", "Logs", "hermes-supervisor")
}

// Install writes the plist and loads it with `launchctl bootstrap` (not the
// legacy `load`), first unloading an older copy of ours: it waits for that
// copy's stop as long as launchd lets it take (its ExitTimeOut), and loads
// the older definition back should the new one not load.
func (l Launchd) Install(c Config, migrate bool) (Plan, error) {
	if err := c.validateInstall(true); err != nil {
		return Plan{}, err
	}
	data, err := l.Plist(c)
	if err != nil {
		return Plan{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	dom, err := l.agentDomain(ctx, c)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	for _, d := range l.hermesAgentDirs(ctx, c) {
		l.migrateAgents(&p, c, d, migrate)
	}
	p.stopHermes(c, migrate)
	if strings.HasPrefix(dom, "user/") {
		p.Notes = append(p.Notes, fmt.Sprintf("no GUI login for uid %d (SSH, or nobody logged in at the Mac): the agent is loaded into %s, the user's background session, as Hermes does", c.UID, dom))
	}
	if !c.System {
		if a := agentTimeouts(c); a.StopTimeout != c.StopTimeout {
			p.Notes = append(p.Notes, fmt.Sprintf("launchd gives a user agent at most %v to exit: the agent's stop timeout is %v, not %v (--system has no such limit)", agentExitLimit, a.StopTimeout, c.StopTimeout))
		}
		p.Notes = append(p.Notes, "macOS 15 and later: a user agent's gateway needs Local Network access; LAN connections failing with EHOSTUNREACH (No route to host) mean it has none: install with --system, which is exempt (README, macOS)")
	}
	p.noteOrigins(c)
	path := l.PlistPath(c)
	// What is loaded now, to load back should the new definition fail:
	// ours, read as every definition is (readDefinition).
	old, _ := readDefinition(path)
	gone := max(plistExitTimeOut(old), time.Duration(exitTimeOut(agentTimeouts(c)))*time.Second) + goneMargin
	target := dom + "/" + c.label()
	if dir := l.LogDir(c); c.System && c.runsAsUser() {
		// Made by root under sudo, it would be root's: made for the user,
		// in a directory of theirs, and never through a link of theirs.
		p.do(fmt.Sprintf("make %s for %s (uid %d), unless it is theirs already", dir, c.User, c.UID), func(context.Context) error {
			// ~/Library/Logs too, should it be missing, as mkdir -p would.
			if _, err := os.Lstat(filepath.Dir(dir)); errors.Is(err, os.ErrNotExist) {
				if err := safefs.MkdirFor(filepath.Dir(dir), c.UID); err != nil {
					return err
				}
			}
			return safefs.MkdirFor(dir, c.UID)
		})
	} else {
		p.Steps = append(p.Steps, Step{Run: []string{"mkdir", "-p", dir}})
	}
	p.write(path, 0o644, data)
	p.run("launchctl", "enable", target)
	p.try("launchctl", "bootout", target)
	p.do(fmt.Sprintf("wait up to %v until `launchctl print %s` shows the old job gone, then %s (retried on errors 5 and 37); should it fail, load the old definition back",
		gone, target, Join([]string{"launchctl", "bootstrap", dom, path})), func(ctx context.Context) error {
		return l.load(ctx, c.label(), dom, path, old, gone)
	})
	l.waitRunning(&p, c, target)
	return p, nil
}

// migrateAgents warns about, or with migrate unloads and disables, Hermes'
// own agents in d that serve c.Home.
func (l Launchd) migrateAgents(p *Plan, c Config, d hermesAgentDir, migrate bool) {
	home := canonicalHome(c.Home)
	found := globSorted(l.Glob, filepath.Join(d.dir, "ai.hermes.gateway*.plist"))
	ours, others := ownedDefinitions(found, home, nil, func(b []byte) (string, bool) {
		h, ok := agentHome(b, filepath.Join(c.UserHome, ".hermes"))
		return canonicalHome(h), ok
	})
	for _, f := range others {
		p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own agent %s runs the gateway of another Hermes home (or cannot be read): left alone", f))
	}
	for _, f := range ours {
		label := strings.TrimSuffix(filepath.Base(f), ".plist")
		if !migrate {
			p.Notes = append(p.Notes, fmt.Sprintf("Hermes' own agent %s (%s) also restarts the gateway of this home; two supervisors would fight over it: rerun with --migrate to unload and disable it", label, f))
			continue
		}
		p.Notes = append(p.Notes, fmt.Sprintf("unloading and disabling Hermes' own agent %s (%s): hermes-supervisor now restarts the gateway", label, f))
		for _, dom := range d.domains {
			p.try("launchctl", "bootout", dom+"/"+label)
		}
		// Disabled is what keeps it from loading at the next login.
		p.run("launchctl", "disable", d.domains[0]+"/"+label)
		for _, dom := range d.domains[1:] {
			p.try("launchctl", "disable", dom+"/"+label)
		}
	}
}

// Uninstall unloads the agent and removes its plist; the logs stay.
func (l Launchd) Uninstall(c Config) (Plan, error) {
	if err := c.Validate(true); err != nil {
		return Plan{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	var p Plan
	p.try("launchctl", "bootout", l.loadedDomain(ctx, c)+"/"+c.label())
	p.remove(l.PlistPath(c))
	return p, nil
}

// Control starts, stops or restarts the loaded agent.
func (l Launchd) Control(c Config, verb string) (Plan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	target := l.loadedDomain(ctx, c) + "/" + c.label()
	var p Plan
	switch verb {
	case "start":
		p.run("launchctl", "kickstart", target)
		l.waitRunning(&p, c, target)
	case "restart":
		p.run("launchctl", "kickstart", "-k", target)
		l.waitRunning(&p, c, target)
	case "stop":
		// SIGTERM: the supervisor stops the gateway and exits 0, which
		// KeepAlive (SuccessfulExit=false) leaves stopped. launchctl kill
		// returns at once; stop returns once the supervisor has exited,
		// as systemctl stop and the SCM's stop do.
		bound := l.stopBound(c)
		var pid string
		p.do("note the pid of "+target, func(ctx context.Context) error {
			if a, err := l.state(ctx, target); err == nil && a.State == "running" {
				pid = a.PID
			}
			return nil
		})
		p.run("launchctl", "kill", "SIGTERM", target)
		p.do(fmt.Sprintf("wait up to %v until that supervisor has exited", bound), func(ctx context.Context) error {
			return l.waitStopped(ctx, c, target, pid, bound)
		})
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
}

// stopBound is how long stop waits for the supervisor to exit: the
// installed plist's ExitTimeOut (its stop timeout and grace), else ours.
func (l Launchd) stopBound(c Config) time.Duration {
	data, _ := readDefinition(l.PlistPath(c))
	if d := plistExitTimeOut(data); d > 0 {
		return d
	}
	return time.Duration(exitTimeOut(agentTimeouts(c))) * time.Second
}

// waitStopped waits until the supervisor launchd ran as pid has exited. One
// that exits with an error (which launchd restarts) or outlasts bound
// fails the stop, saying so.
func (l Launchd) waitStopped(ctx context.Context, c Config, target, pid string, bound time.Duration) error {
	if pid == "" {
		return nil // it was not running
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var now agentState
	err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
		var err error
		if now, err = l.state(ctx, target); err != nil {
			return true, nil // unloaded: gone
		}
		switch {
		case now.State == "running" && now.PID == pid:
			return false, nil
		case now.LastExit != "" && now.LastExit != "0":
			return false, l.notRunning(c, now, " after SIGTERM, so launchd restarts it (it stops only after exit 0)")
		case now.State == "running":
			return false, fmt.Errorf("%s: the supervisor (pid %s) exited and launchd started another (pid %s): run `%s` again", target, pid, now.PID, c.command("stop"))
		}
		return true, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: the supervisor (pid %s) is still stopping after %v: `hermes-supervisor status` shows what it waits for", target, pid, bound)
	}
	return err
}

// plistExitTimeOut reads the ExitTimeOut of a plist; 0 when there is none.
func plistExitTimeOut(data []byte) time.Duration {
	var p struct {
		ExitTimeOut int `plist:"ExitTimeOut"`
	}
	if data == nil {
		return 0
	}
	if _, err := plist.Unmarshal(data, &p); err != nil || p.ExitTimeOut <= 0 {
		return 0
	}
	return time.Duration(min(p.ExitTimeOut, 3600)) * time.Second
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

func (l Launchd) state(ctx context.Context, target string) (agentState, error) {
	argv := []string{"launchctl", "print", target}
	out, err := l.output(ctx, argv)
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
func (l Launchd) waitRunning(p *Plan, c Config, target string) {
	p.wait(c, c.label()+" is running and its gateway ready", func(ctx context.Context) error {
		var now agentState
		var since time.Time
		var pid string
		var notReady error
		err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
			var err error
			if now, err = l.state(ctx, target); err != nil {
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
	owner := -1 // the installer's own files, or root's
	if c.System && c.runsAsUser() {
		owner = c.UID // in the user's directory, read as root
	}
	log := filepath.Join(l.LogDir(c), c.name()+".log")
	lines := tailFile(log, 15, owner)
	if lines == "" {
		// It died before it could log: launchd kept its stderr.
		log = filepath.Join(l.LogDir(c), c.name()+".stderr.log")
		lines = tailFile(log, 15, owner)
	}
	if lines == "" {
		lines = "(none readable)"
	}
	return fmt.Errorf("%w: %s is %q (last exit code %s)%s; its last log lines:\n%s\nfix the cause (%s has more), then run `%s`",
		ErrNotRunning, c.label(), a.State, a.LastExit, after, lines, log, c.command("start"))
}

// output runs argv (launchctl) and returns what it printed.
func (l Launchd) output(ctx context.Context, argv []string) ([]byte, error) {
	if l.Output != nil {
		return l.Output(ctx, argv)
	}
	return Command(ctx, argv).CombinedOutput()
}

// goneMargin is how much longer than the old job's ExitTimeOut install
// waits for it to leave launchd: by then launchd has killed it, and only
// its teardown is left.
const goneMargin = 10 * time.Second

// waitGone waits up to bound until `launchctl print` no longer finds
// target: bootout returns before launchd has torn the job down (the old
// supervisor may be draining its gateway), and a bootstrap then fails with
// "Bootstrap failed: 5: Input/output error".
func (l Launchd) waitGone(ctx context.Context, target string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := l.output(ctx, []string{"launchctl", "print", target})
		return err != nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s is still loaded %v after bootout: %w", target, bound, err)
	}
	return nil
}

// load waits for the old job to go and bootstraps the new definition at
// path. Should that fail it writes the old definition back and loads it,
// so that a failed reinstall leaves the agent as it was, never unloaded
// until the next login; the error says which definition is loaded.
func (l Launchd) load(ctx context.Context, label, dom, path string, old []byte, gone time.Duration) error {
	target := dom + "/" + label
	err := l.waitGone(ctx, target, gone)
	if err == nil {
		err = l.bootstrap(ctx, label, dom, path, gone)
	}
	if err == nil {
		return nil
	}
	if old == nil {
		return fmt.Errorf("%w: no earlier definition to load back, so nothing of ours is loaded: fix the cause, then run `hermes-supervisor install` again", err)
	}
	if werr := writeDefinition(File{Path: path, Mode: 0o644, Data: old}); werr != nil {
		return errors.Join(err, fmt.Errorf("writing the old definition back: %w: nothing of ours is loaded; run `hermes-supervisor install` again", werr))
	}
	if _, perr := l.output(ctx, []string{"launchctl", "print", target}); perr == nil {
		return fmt.Errorf("%w: the old job is still loaded and its definition is back at %s: once `launchctl print %s` no longer finds it, run `launchctl bootstrap %s %s` or `hermes-supervisor install` again", err, path, target, dom, path)
	}
	if berr := l.bootstrap(ctx, label, dom, path, gone); berr != nil {
		return errors.Join(err, fmt.Errorf("loading the old definition back failed too: %w: nothing of ours is loaded; run `launchctl bootstrap %s %s`", berr, dom, path))
	}
	return fmt.Errorf("%w: the new definition did not load; the old one is back at %s and loaded, so the agent runs as before", err, path)
}

// bootstrapTries bounds the retries of a bootstrap that hits launchd's
// teardown race.
const bootstrapTries = 5

// bootstrap loads the plist, retrying errors 5 (EIO: the old job is still
// being torn down) and 37 (EALREADY: an operation on it is in progress),
// after waiting for the old job to go again.
func (l Launchd) bootstrap(ctx context.Context, label, dom, path string, gone time.Duration) error {
	argv := []string{"launchctl", "bootstrap", dom, path}
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
		if werr := l.waitGone(ctx, dom+"/"+label, gone); werr != nil {
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
