package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// serviceFlags are the flags of install, uninstall and start.
type serviceFlags struct {
	user, system, dryRun, migrate, demo bool
	stopTimeout                         time.Duration
	watchdog                            time.Duration
}

func (f *serviceFlags) register(cmd *cobra.Command, install bool) {
	fl := cmd.Flags()
	fl.BoolVar(&f.user, "user", false, "the current user's service (the default): a systemd user unit or a launchd agent")
	fl.BoolVar(&f.system, "system", false, "a machine-wide service: a systemd system unit or a launchd daemon (needs root)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print every file that would be written and every command that would run, and change nothing")
	cmd.MarkFlagsMutuallyExclusive("user", "system")
	if install {
		fl.BoolVar(&f.migrate, "migrate", false, "also stop and disable Hermes' own gateway unit or agent for this user")
		fl.BoolVar(&f.demo, "demo", false, "have the service supervise the built-in demo gateway (to try it out)")
		fl.DurationVar(&f.stopTimeout, "stop-timeout", supervisor.DefaultStopTimeout, "the supervisor's stop timeout; the service manager waits 15 s longer before it kills")
		fl.DurationVar(&f.watchdog, "watchdog", 0, "systemd: WatchdogSec= of our unit; the supervisor pings from its state machine and a stuck one is restarted (0: none)")
	}
}

// serviceCmd builds a command that turns the service flags into a plan of
// the OS's service manager and prints or applies it.
func serviceCmd(g *globals, install bool, use, short, long string, plan func(service.Manager, service.Config, *serviceFlags) (service.Plan, error)) *cobra.Command {
	f := &serviceFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := serviceConfig(g, f)
			if err != nil {
				return err
			}
			p, err := plan(service.New(), c, f)
			if err != nil {
				return err
			}
			return carryOut(cmd, p, f.dryRun)
		},
	}
	f.register(cmd, install)
	return cmd
}

func newInstallCmd(g *globals) *cobra.Command {
	return serviceCmd(g, true, "install [--user|--system] [--dry-run] [--migrate]",
		"Install and start hermes-supervisor as a service (systemd, launchd or the Windows SCM)",
		`Install writes a service definition of our own (systemd: hermes-supervisor.service,
Type=notify; launchd: ai.hermes.supervisor with KeepAlive; Windows: the service
hermes-supervisor with recovery actions) that runs "hermes-supervisor run" for the
Hermes home, then enables and starts it. Hermes' own gateway unit, agent or
Scheduled Task would restart the gateway too: install warns about it, and with
--migrate stops and disables it.`,
		func(m service.Manager, c service.Config, f *serviceFlags) (service.Plan, error) {
			if err := gatewayFound(g, f); err != nil {
				return service.Plan{}, err
			}
			return m.Install(c, f.migrate)
		})
}

func newUninstallCmd(g *globals) *cobra.Command {
	return serviceCmd(g, false, "uninstall [--user|--system] [--dry-run]",
		"Stop the service and remove its definition (logs and the Hermes home are kept)", "",
		func(m service.Manager, c service.Config, _ *serviceFlags) (service.Plan, error) {
			return m.Uninstall(c)
		})
}

func newStartCmd(g *globals) *cobra.Command {
	return serviceCmd(g, false, "start [--user|--system] [--dry-run]",
		"Start the installed service (use `run` to supervise in the foreground instead)", "",
		func(m service.Manager, c service.Config, _ *serviceFlags) (service.Plan, error) {
			return m.Control(c, "start")
		})
}

// serviceConfig pins everything the service needs at install time: the
// service manager's environment is not the shell's, so the home and lock
// dir are written into the definition rather than resolved again there.
func serviceConfig(g *globals, f *serviceFlags) (service.Config, error) {
	layout, err := g.layout()
	if err != nil {
		return service.Config{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return service.Config{}, fmt.Errorf("find own executable: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	c := service.Config{Exe: exe, Home: layout.Home, LockDir: layout.LockDir, System: f.system,
		StopTimeout: f.stopTimeout, UID: os.Getuid(), Path: g.getenv("PATH"), Demo: f.demo, Watchdog: f.watchdog}
	if f.watchdog < 0 {
		return service.Config{}, fmt.Errorf("--watchdog must not be negative, got %s: pass a deadline such as 30s, or 0 for none", f.watchdog)
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = supervisor.DefaultStopTimeout
	}
	if h, err := os.UserHomeDir(); err == nil {
		c.UserHome = h
	}
	if f.system {
		// Installed with sudo, the supervisor runs as the user who asked.
		c.User = g.getenv("SUDO_USER")
		if u, err := user.Current(); c.User == "" && err == nil {
			c.User = u.Username
		}
	}
	return c, nil
}

// gatewayFound refuses to install a service that would quietly run the
// demo gateway: `run` falls back to it when hermes is not on PATH, which
// in a foreground shell says so, but in a service nobody reads.
func gatewayFound(g *globals, f *serviceFlags) error {
	if f.demo || len(g.file.Command) > 0 {
		return nil
	}
	if _, err := exec.LookPath(defaultGateway[0]); err != nil {
		return errors.New("hermes is not on PATH, so the service would run the demo gateway: install Hermes (or put it on PATH), set \"command\" in the config file, or pass --demo to install the demo on purpose")
	}
	return nil
}

// carryOut prints the plan (--dry-run) or applies it, echoing each command
// as it runs.
func carryOut(cmd *cobra.Command, plan service.Plan, dryRun bool) error {
	if dryRun {
		return plan.Print(cmd.OutOrStdout())
	}
	errOut := cmd.ErrOrStderr()
	for _, n := range plan.Notes {
		fmt.Fprintf(errOut, "note: %s\n", n)
	}
	err := plan.Apply(cmd.Context(), func(ctx context.Context, argv []string) error {
		fmt.Fprintf(errOut, "+ %s\n", service.Join(argv))
		return runQuiet(ctx, errOut, argv)
	})
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: a --system service needs root (sudo)", err)
	}
	return err
}

func runQuiet(ctx context.Context, out io.Writer, argv []string) error {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Stdout, c.Stderr = out, out
	return c.Run()
}
