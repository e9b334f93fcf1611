package main

// What install gives the service: the Config it renders, and where each
// value came from.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// serviceConfig pins everything the service needs at install time: the
// service manager's environment is not the shell's, so the home and lock
// dir are written into the definition rather than resolved again there.
// Under sudo, a --system service is for the user who ran sudo: the home,
// lock dir and PATH are theirs, not root's. It returns the globals as that
// user sees them (their config file).
func serviceConfig(ctx context.Context, g *globals, f *serviceFlags) (*globals, service.Config, error) {
	sg := g
	var acct *service.Account
	if sudoUser := sudoUser(g); f.system && sudoUser != "" {
		a, err := service.LookupAccount(ctx, sudoUser)
		if err != nil {
			return nil, service.Config{}, fmt.Errorf("%w: SUDO_USER names the user the service runs as", err)
		}
		acct = &a
		ug := *g
		ug.getenv = a.Getenv(g.getenv)
		sg = &ug
	}
	layout, err := sg.layout()
	if err != nil {
		return nil, service.Config{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, service.Config{}, fmt.Errorf("find own executable: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	c := service.Config{Exe: exe, Home: layout.Home, Suffix: lockstore.ServiceSuffix(layout.Home), LockDir: layout.LockDir, System: f.system,
		UID: os.Getuid(), Path: sg.getenv("PATH"), Demo: f.demo, Wait: f.wait, Watchdog: f.watchdog}
	var stopFrom service.Origin
	c.StopTimeout, stopFrom = stopTimeoutOf(sg, f)
	if c.ConfigFile, err = pinnedConfig(sg, layout.Home); err != nil {
		return nil, service.Config{}, err
	}
	// launchd cannot tell when the gateway is ready; the supervisor can.
	c.Ready = func(ctx context.Context) error {
		st, err := supervisor.QueryStatus(ctx, layout)
		switch {
		case err != nil:
			return err
		case st.State != supervisor.Running:
			return fmt.Errorf("the supervisor says %s: %s", st.State, st.Reason)
		}
		return nil
	}
	if f.watchdog < 0 {
		return nil, service.Config{}, fmt.Errorf("--watchdog must not be negative, got %s: pass a deadline such as 30s, or 0 for none", f.watchdog)
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = supervisor.DefaultStopTimeout
	}
	if h, err := os.UserHomeDir(); err == nil {
		c.UserHome = h
	}
	switch {
	case acct != nil:
		c.User, c.UID, c.UserHome = acct.Name, acct.UID, acct.Home
	case f.system:
		if u, err := passwd.Current(ctx); err == nil {
			c.User = u.Username
		}
	}
	c.Origins = origins(sg, acct)
	c.Origins.StopTimeout = stopFrom
	return sg, c, nil
}

// askStopWait sets c.StopWait for a command about to stop the installed
// service of c.Home (stop, uninstall, a reinstall), from fixed (stop's
// --timeout) or the running supervisor's answer, where the service
// manager waits it (service.WaitsOnStop). It is asked there and not in
// serviceConfig: no other command uses the answer, and a supervisor that
// cannot answer (stopped by Ctrl-Z) holds each ask for its whole 2 s.
func askStopWait(ctx context.Context, c *service.Config, fixed time.Duration) {
	if !service.WaitsOnStop() {
		return
	}
	c.StopWait = supervisor.PlanStopWait(ctx, c.Home, fixed).ServiceWait()
}

// stopTimeoutOf is the stop timeout the service's run would use, which
// install pins (the service manager's kill deadline is written from it):
// --stop-timeout when given, else the config file's stop_timeout, else the
// default. from names the file's key when the file chose it, and is empty
// otherwise: a value typed or left at its default needs no note.
func stopTimeoutOf(g *globals, f *serviceFlags) (d time.Duration, from service.Origin) {
	if !f.stopTimeoutSet && g.file.StopTimeout != 0 {
		return time.Duration(g.file.StopTimeout), service.Origin{From: fmt.Sprintf("config file %s, key %q", g.file.Path, "stop_timeout")}
	}
	return f.stopTimeout, service.Origin{}
}

// pinnedConfig is the absolute path of the config file the service must be
// told of: the one loaded, unless it is the home's own, which run reads
// by default. A file named by --config or HERMES_SUPERVISOR_CONFIG would
// otherwise be lost (the service manager passes neither), and the service
// would run without its "command", on the demo gateway install refuses.
func pinnedConfig(g *globals, home string) (string, error) {
	if g.file.Path == "" {
		return "", nil
	}
	p, err := filepath.Abs(g.file.Path)
	if err != nil {
		return "", fmt.Errorf("config file %s: %w: pass --config an absolute path", g.file.Path, err)
	}
	if p == filepath.Join(home, "hermes-supervisor.json") {
		return "", nil
	}
	return p, nil
}

// origins says where serviceConfig took each value from, in the order
// globals.layout and lockstore.DefaultHermesHome/DefaultLockDir choose
// them, so that a value refused (or shown in the plan) is named by its
// source. Under sudo (acct set) whatever the invoking user did not type on
// this command line, a config file of theirs, their login's PATH or an
// environment variable sudo kept, is Unseen: install shows it first.
func origins(g *globals, acct *service.Account) service.Origins {
	sudo := acct != nil
	typed := func(flag string) service.Origin { return service.Origin{From: flag} }
	env := func(k string) service.Origin {
		return service.Origin{From: "the environment variable " + k, Unseen: sudo}
	}
	file := func(key string) service.Origin {
		return service.Origin{From: fmt.Sprintf("config file %s, key %q", g.file.Path, key), Unseen: sudo}
	}
	fromHome := service.Origin{From: "the default under HOME"}
	if sudo {
		fromHome.From = "the default under " + acct.Name + "'s home (passwd)"
	}
	var o service.Origins
	o.Exe = service.Origin{From: "this binary's own path"}
	switch {
	case g.home != "":
		o.Home = typed("--home")
	case pyparse.Strip(g.getenv("HERMES_HOME")) != "":
		o.Home = env("HERMES_HOME")
	case g.getenv("HERMES_HOME") == "" && g.file.Home != "":
		o.Home = file("home")
	case g.getenv("HERMES_DATA_DIR_SUFFIX") != "":
		o.Home = service.Origin{From: fromHome.From + " and the environment variable HERMES_DATA_DIR_SUFFIX", Unseen: sudo}
	default:
		o.Home = fromHome
	}
	switch {
	case g.lockDir != "":
		o.LockDir = typed("--lock-dir")
	case g.getenv("HERMES_GATEWAY_LOCK_DIR") == "" && g.file.LockDir != "":
		o.LockDir = file("lock_dir")
	case g.getenv("HERMES_GATEWAY_LOCK_DIR") != "":
		o.LockDir = env("HERMES_GATEWAY_LOCK_DIR")
	case g.getenv("XDG_STATE_HOME") != "":
		o.LockDir = env("XDG_STATE_HOME")
	default:
		o.LockDir = fromHome
	}
	if g.configPath != "" {
		o.ConfigFile = typed("--config")
	} else {
		o.ConfigFile = env("HERMES_SUPERVISOR_CONFIG")
	}
	o.Path = service.Origin{From: "the environment variable PATH"}
	o.UserHome = service.Origin{From: "HOME"}
	o.User = service.Origin{From: "the current user"}
	if sudo {
		o.User = service.Origin{From: "SUDO_USER"}
		o.UserHome = service.Origin{From: acct.Name + "'s passwd entry"}
		if acct.Path != "" {
			o.Path = service.Origin{From: acct.Name + "'s login shell (su -l, which reads their profile)", Unseen: true}
		}
	}
	o.Command = service.Origin{From: "hermes, found on " + o.Path.From, Unseen: o.Path.Unseen}
	return o
}
