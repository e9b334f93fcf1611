package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// serviceFlags are the flags of install, uninstall, start and stop.
type serviceFlags struct {
	user, system, dryRun, migrate, demo bool
	force                               bool
	runAsInstaller                      bool
	stopTimeout, wait                   time.Duration
	watchdog                            time.Duration
	// stopWait is stop's --timeout (0 when not given): see askStopWait.
	stopWait time.Duration
	// stopTimeoutSet says --stop-timeout was given: only then does it
	// beat the config file's stop_timeout (see stopTimeoutOf).
	stopTimeoutSet bool
}

// defaultWait is how long install and start wait for the service to run:
// longer than the supervisor's own ready timeout, after which it reports
// ready even without the gateway's pid file.
const defaultWait = supervisor.DefaultReadyTimeout + 30*time.Second

func (f *serviceFlags) register(cmd *cobra.Command, install, wait bool) {
	fl := cmd.Flags()
	fl.BoolVar(&f.user, "user", false, "the current user's service: a systemd user unit or a launchd agent (default: the one installed; for install, this)")
	fl.BoolVar(&f.system, "system", false, "the machine-wide service: a systemd system unit or a launchd daemon (needs root)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print every file that would be written and every command that would run, and change nothing")
	cmd.MarkFlagsMutuallyExclusive("user", "system")
	if install {
		fl.BoolVar(&f.migrate, "migrate", false, "also stop and disable Hermes' own gateway unit or agent for this user")
		fl.BoolVar(&f.runAsInstaller, "run-as-installer", false, "Windows: run the service as this (elevated) account even though another account owns the Hermes home; the gateway then has this account's rights and files")
		fl.BoolVar(&f.demo, "demo", false, "have the service supervise the built-in demo gateway (to try it out)")
		fl.BoolVar(&f.force, "force", false, "install for a profile even while the root home's gateway serves it as Hermes' multiplexer")
		fl.DurationVar(&f.stopTimeout, "stop-timeout", supervisor.DefaultStopTimeout, "the supervisor's stop timeout; the service manager waits 15 s longer before it kills")
		fl.DurationVar(&f.watchdog, "watchdog", 0, "systemd: WatchdogSec= of our unit; the supervisor pings from its state machine and a stuck one is restarted (0: none)")
	}
	if wait {
		fl.DurationVar(&f.wait, "wait", defaultWait, "how long to wait for the service to be running (systemd: active after READY); 0 does not wait")
	}
}

// serviceCmd builds a command that turns the service flags into a plan of
// the OS's service manager and prints or applies it. Every command but
// install acts on the definition that exists (see pickDefinition).
func serviceCmd(g *globals, install, wait bool, use, short, long string, plan func(context.Context, service.Manager, *globals, service.Config, *serviceFlags) (service.Plan, error)) *cobra.Command {
	f := &serviceFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.stopTimeoutSet = cmd.Flags().Changed("stop-timeout")
			f := underSudo(g, f, install)
			if err := refuseUserUnitUnderSudo(g, f, use); err != nil {
				return err
			}
			sg, c, err := serviceConfig(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			m := service.New()
			if !install {
				def, found, err := pickDefinition(m, &c, f, "")
				if err != nil {
					return err
				}
				if !found {
					return notInstalled(cmd, f, use)
				}
				if def.Home != "" {
					c.Home = def.Home
				}
			}
			c.StopSupervisor = stopSupervisor(c.Home)
			p, err := plan(cmd.Context(), m, sg, c, f)
			if err != nil {
				return err
			}
			return carryOut(cmd, p, f.dryRun)
		},
	}
	f.register(cmd, install, wait)
	return cmd
}

// stopSupervisor asks the supervisor of home to stop over its control
// endpoint, for a service manager that refuses to (see
// service.Config.StopSupervisor); none listening is nothing to stop.
func stopSupervisor(home string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		resp, err := supervisor.CallHome(ctx, home, "stop")
		switch {
		case errors.Is(err, ctlsock.ErrNoEndpoint):
			return nil
		case err != nil:
			return fmt.Errorf("ask the supervisor to stop: %w", err)
		case !resp.OK:
			return fmt.Errorf("the supervisor refused to stop: %s", termtext.Quote(resp.Error))
		}
		return nil
	}
}

// pickDefinition finds the installed service a command acts on and sets
// c.System to its scope: the one --user or --system names, else the only
// one there is (of home, when home is set). Both installed and no flag is
// an error naming both flags: guessing would act on the wrong one.
func pickDefinition(m service.Manager, c *service.Config, f *serviceFlags, home string) (service.Definition, bool, error) {
	var defs []service.Definition
	for _, d := range m.Installed(*c) {
		if home == "" || d.Home == home {
			defs = append(defs, d)
		}
	}
	if f.user || f.system {
		c.System = f.system
		for _, d := range defs {
			if d.System == f.system {
				return d, true, nil
			}
		}
		return service.Definition{}, false, nil
	}
	switch len(defs) {
	case 0:
		return service.Definition{}, false, nil
	case 1:
		c.System = defs[0].System
		return defs[0], true, nil
	}
	return service.Definition{}, false, fmt.Errorf("both a user service (%s) and a system service (%s) are installed: pass --user or --system", defs[0].Path, defs[1].Path)
}

// notInstalled says there is no service to act on: uninstall has nothing
// to do, start cannot.
func notInstalled(cmd *cobra.Command, f *serviceFlags, use string) error {
	scope := "no hermes-supervisor service is installed"
	switch {
	case f.user:
		scope = "no user hermes-supervisor service is installed"
	case f.system:
		scope = "no system hermes-supervisor service is installed"
	}
	if cobraName(use) == "uninstall" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing to uninstall\n", scope)
		return nil
	}
	return fmt.Errorf("%s: run `hermes-supervisor install` first, or `hermes-supervisor run` in the foreground", scope)
}

func cobraName(use string) string {
	name, _, _ := strings.Cut(use, " ")
	return name
}

func newInstallCmd(g *globals) *cobra.Command {
	return serviceCmd(g, true, true, "install [--user|--system] [--dry-run] [--migrate] [--wait D]",
		"Install and start hermes-supervisor as a service (systemd, launchd or the Windows SCM)",
		`Install writes a service definition of our own (systemd: hermes-supervisor.service,
Type=notify; launchd: ai.hermes.supervisor with KeepAlive; Windows: the service
hermes-supervisor with recovery actions) that runs "hermes-supervisor run" for the
Hermes home, then enables and starts it, and waits until it really runs
(--wait): a service that does not come up fails the install with its last log
lines. Hermes' own gateway unit, agent or Scheduled Task would restart the
gateway too: install warns about it, and with --migrate stops and disables it.

Under sudo, --system installs for the user who ran sudo: the service runs as
that user, with their Hermes home, lock directory and login PATH.`,
		func(ctx context.Context, m service.Manager, sg *globals, c service.Config, f *serviceFlags) (service.Plan, error) {
			if err := refuseServed(ctx, c, f); err != nil {
				return service.Plan{}, err
			}
			argv, err := gatewayFound(sg, f, c)
			if err != nil {
				return service.Plan{}, err
			}
			c.Command = argv
			c.RunAsInstaller = f.runAsInstaller
			if f.migrate {
				// A gateway Hermes runs detached (its Scheduled Task's
				// python.exe, a `hermes gateway run &`) outlives its
				// service definition: stop it as Hermes' own stop does.
				layout, err := sg.layout()
				if err != nil {
					return service.Plan{}, err
				}
				log, _, err := sg.logger(zapcore.Lock(os.Stderr), false, false)
				if err != nil {
					return service.Plan{}, err
				}
				// Only the gateway of the user the service runs as: under
				// sudo the home may be another user's (see HermesStop.UID).
				uid := c.UID
				c.StopHermes = supervisor.HermesStop{Layout: layout, Log: log, UID: &uid}.StopHermes
			}
			if !f.dryRun {
				if c.Password, err = service.Password(sg.getenv); err != nil {
					return service.Plan{}, err
				}
			}
			// A reinstall stops the service it replaces first.
			askStopWait(ctx, &c, 0)
			p, err := m.Install(c, f.migrate)
			if err == nil && c.Origins.StopTimeout.From != "" {
				// run would read the file's value too, but the service
				// manager's own kill deadline is written from it now.
				p.Notes = append(p.Notes, fmt.Sprintf("the service's stop timeout %s comes from %s, and is pinned into the service: after changing it, run install again", c.StopTimeout, c.Origins.StopTimeout))
			}
			return p, err
		})
}

func newUninstallCmd(g *globals) *cobra.Command {
	return serviceCmd(g, false, false, "uninstall [--user|--system] [--dry-run]",
		"Stop the service and remove its definition (logs and the Hermes home are kept)",
		"Uninstall acts on the service that is installed, user or system; pass --user or --system\nwhen both are.",
		func(ctx context.Context, m service.Manager, _ *globals, c service.Config, _ *serviceFlags) (service.Plan, error) {
			askStopWait(ctx, &c, 0)
			return m.Uninstall(c)
		})
}

func newStartCmd(g *globals) *cobra.Command {
	return serviceCmd(g, false, true, "start [--user|--system] [--dry-run] [--wait D]",
		"Start the installed service (use `run` to supervise in the foreground instead)",
		"Start starts the service that is installed, user or system (pass --user or --system\nwhen both are), and waits until it runs (--wait).",
		func(_ context.Context, m service.Manager, _ *globals, c service.Config, _ *serviceFlags) (service.Plan, error) {
			return m.Control(c, "start")
		})
}

// stopService stops the installed service of this home through its
// manager, so that the manager records a stop on request; it reports
// false when there is none we may control, and `stop` then asks the
// supervisor over its control endpoint (which also ends a service: the
// supervisor exits 0, which no manager restarts).
func stopService(cmd *cobra.Command, g *globals, f *serviceFlags) (bool, error) {
	f = underSudo(g, f, false)
	_, c, err := serviceConfig(cmd.Context(), g, f)
	if err != nil {
		return false, err
	}
	m := service.New()
	def, found, err := pickDefinition(m, &c, f, c.Home)
	if err != nil || !found || !service.MayControl(def.System) {
		return false, err
	}
	askStopWait(cmd.Context(), &c, f.stopWait)
	p, err := m.Control(c, "stop")
	if err != nil {
		return false, err
	}
	if err := carryOut(cmd, p, f.dryRun); err != nil {
		if errors.Is(err, service.ErrStopRefused) {
			// A service still waiting for its gateway to be ready: the
			// supervisor itself can end it.
			fmt.Fprintln(cmd.ErrOrStderr(), "stop: the service manager refused while the service starts; asking the supervisor")
			return false, nil
		}
		return true, err
	}
	if !f.dryRun {
		fmt.Fprintln(cmd.OutOrStdout(), "stop: stopped")
	}
	return true, nil
}

// sudoUser is the user who ran us through sudo, or "" when we run as
// ourselves (or sudo made root of root).
func sudoUser(g *globals) string {
	if u := g.getenv("SUDO_USER"); u != "" && u != "root" && os.Geteuid() == 0 {
		return u
	}
	return ""
}

// underSudo reads `sudo hermes-supervisor start|stop|uninstall` as being
// about the machine's service, the only one root can drive (a user unit
// needs that user's own manager): --system unless --user was given.
// install keeps its flags: without --system it is the user's unit.
func underSudo(g *globals, f *serviceFlags, install bool) *serviceFlags {
	if install || f.user || f.system || sudoUser(g) == "" {
		return f
	}
	sf := *f
	sf.system = true
	return &sf
}

// refuseUserUnitUnderSudo refuses to install or uninstall a user service
// under sudo: that is root's own, written or removed by root under the
// HOME sudo gave it, which -E, env_keep and macOS' default keep the
// user's, where a link they planted decides where root writes. (Writes and
// removals also go only through directories of root's, see
// service.Plan.Apply; this says what to do instead.) start and stop
// change no file and are left alone.
func refuseUserUnitUnderSudo(g *globals, f *serviceFlags, use string) error {
	verb, _, _ := strings.Cut(use, " ")
	u := sudoUser(g)
	if f.system || u == "" || verb != "install" && verb != "uninstall" {
		return nil
	}
	return fmt.Errorf("under sudo, %s would act on a user service of root's, under HOME (%s), not on %s's: run `hermes-supervisor %s` as %s without sudo, or pass --system for the machine's service",
		verb, g.getenv("HOME"), u, verb, u)
}

// gatewayFound refuses to install a service that would quietly run the
// demo gateway: `run` falls back to it when hermes is not on PATH, which
// in a foreground shell says so, but in a service nobody reads. It returns
// the default gateway command with hermes resolved on the service's PATH
// (under sudo ours is sudo's secure_path), for the service to pin; nil
// for the demo and for a config file's command, which stays the file's.
func gatewayFound(g *globals, f *serviceFlags, c service.Config) ([]string, error) {
	if f.demo || len(g.file.Command) > 0 {
		return nil, nil
	}
	argv, err := service.ResolveCommand(gatewayArgv(c.Home), c.Path)
	switch {
	case errors.Is(err, service.ErrNoGateway):
		return nil, errors.New("hermes is not on PATH, so the service would run the demo gateway: install Hermes (or put it on PATH), set \"command\" in the config file, or pass --demo to install the demo on purpose")
	case err != nil:
		return nil, err
	}
	return argv, nil
}

// carryOut prints the plan (--dry-run) or applies it, echoing each command
// as it runs.
func carryOut(cmd *cobra.Command, plan service.Plan, dryRun bool) error {
	if dryRun {
		return plan.Print(cmd.OutOrStdout())
	}
	errOut := cmd.ErrOrStderr()
	for _, n := range plan.Notes {
		fmt.Fprintf(errOut, "note: %s\n", termtext.Line(n))
	}
	err := plan.Apply(cmd.Context(), func(ctx context.Context, argv []string) error {
		fmt.Fprintf(errOut, "+ %s\n", termtext.Line(service.Join(argv)))
		return runQuiet(ctx, errOut, argv)
	})
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: a --system service needs root (sudo)", err)
	}
	return err
}

func runQuiet(ctx context.Context, out io.Writer, argv []string) error {
	c := service.Command(ctx, argv)
	c.Stdout, c.Stderr = out, out
	return c.Run()
}
