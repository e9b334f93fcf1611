package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/platform/logfile"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"
	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// defaultGateway is Hermes' gateway of a root home (gatewayArgv adds a
// named profile's -p), without --external-supervisor: a Hermes older
// than the flag rejects it and never runs, so `run` adds it only where
// the installed Hermes lists it (supervisor.WithExternalSupervisor). The
// supervisor also passes HERMES_GATEWAY_EXTERNAL_SUPERVISOR=1.
var defaultGateway = []string{"hermes", "gateway", "run"}

type runFlags struct {
	demo         bool
	stopTimeout  time.Duration
	maxExtension time.Duration
	asService    bool
	logFile      string
	controlUsers []string
	readyTimeout time.Duration
	ctlTimeout   time.Duration
	policy       supervisor.Policy
	watchdog     time.Duration
	hangAfter    time.Duration
	outBurst     int
	outInterval  time.Duration
}

func newRunCmd(g *globals) *cobra.Command {
	f := &runFlags{policy: supervisor.DefaultPolicy()}
	cmd := &cobra.Command{
		Use:   "run [--demo] [-- COMMAND ARGS...]",
		Short: "Supervise the gateway in the foreground",
		Long: `Run supervises the Hermes gateway in the foreground until SIGTERM or SIGINT.

Before every start it sweeps stale pid and lock files (only those whose owner
is dead, a zombie, stopped, or a process that reused the pid). On every exit it
releases the gateway's own files and restarts it with backoff; exit 75 restarts
at once, exit 78 stops restarting. SIGHUP restarts the gateway.

The gateway command is, in order: COMMAND after --, the config file's
"command", "hermes gateway run" when hermes is on PATH, else the built-in demo
gateway. Every gateway gets HERMES_GATEWAY_EXTERNAL_SUPERVISOR=1 and
HERMES_GATEWAY_MAX_STARTS=0 unless the config file's "env" sets them.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runSupervisor(cmd, g, f, args)
			if err != nil && f.asService && service.SupportsRunAsService() {
				log, name := "", service.Name
				if layout, lerr := g.layout(); lerr == nil {
					log = filepath.Join(layout.Home, "hermes-supervisor.log")
					name = service.NameFor(lockstore.ServiceSuffix(layout.Home))
				}
				service.ReportStartupError(name, log, err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.BoolVar(&f.demo, "demo", false, "supervise the built-in demo gateway")
	fl.BoolVar(&f.asService, "service", false, "run under the Windows service control manager (what install sets up), logging to <home>/hermes-supervisor.log")
	fl.StringVar(&f.logFile, "log-file", "", "log to this file, rotated at 10 MB with 3 kept, instead of stderr (launchd rotates nothing)")
	fl.StringSliceVar(&f.controlUsers, "control-user", nil, "Windows: a SID that may also use the control pipe (the user who installed the service)")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", supervisor.DefaultStopTimeout, "how long a stop waits before killing the gateway's process tree")
	fl.DurationVar(&f.maxExtension, "max-stop-extension", supervisor.DefaultMaxStopExtension, "the most the gateway's EXTEND_TIMEOUT_USEC may add to the stop timeout; 0 honours none")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", supervisor.DefaultReadyTimeout, "how long a gateway may run without writing gateway.pid before it counts as running")
	fl.DurationVar(&f.watchdog, "watchdog", 0, "the gateway's sd_notify keep-alive deadline (WATCHDOG_USEC), overriding Hermes' gateway.systemd_watchdog_seconds; 0 turns it off")
	fl.DurationVar(&f.hangAfter, "hang-after", 0, "take the gateway down when Hermes' state/gateway.heartbeat naming it is older than this (for Windows; 0: off)")
	fl.IntVar(&f.outBurst, "log-rate-limit-burst", supervisor.DefaultOutputBurst, "lines of gateway output logged per --log-rate-limit-interval before the rest is counted, not logged (journald's RateLimitBurst); 0 turns the limit off")
	fl.DurationVar(&f.outInterval, "log-rate-limit-interval", supervisor.DefaultOutputInterval, "the interval of --log-rate-limit-burst (journald's RateLimitIntervalSec); 0 turns the limit off")
	fl.DurationVar(&f.ctlTimeout, "control-timeout", supervisor.DefaultRequestTimeout, "how long a client of the control endpoint may take to send its request before it is dropped")
	fl.DurationVar(&f.policy.InitialBackoff, "initial-backoff", f.policy.InitialBackoff, "delay before the second restart of a failure streak (the first is immediate)")
	fl.DurationVar(&f.policy.MaxBackoff, "max-backoff", f.policy.MaxBackoff, "longest delay between restarts")
	fl.DurationVar(&f.policy.ResetAfter, "reset-after", f.policy.ResetAfter, "uptime after which a run counts as healthy and the backoff resets")
	fl.IntVar(&f.policy.CrashLoopMax, "crash-loop-max", f.policy.CrashLoopMax, "failures within --crash-loop-window that put the supervisor in the failed state")
	fl.DurationVar(&f.policy.CrashLoopWindow, "crash-loop-window", f.policy.CrashLoopWindow, "window for --crash-loop-max")
	fl.Float64Var(&f.policy.Jitter, "jitter", f.policy.Jitter, "fraction by which each backoff delay varies")
	fl.DurationVar(&f.policy.MinUptime, "min-uptime", f.policy.MinUptime, "a restart request (exit 75) sooner than this after start counts as a failure")
	fl.DurationVar(&f.policy.HandoverGrace, "handover-grace", f.policy.HandoverGrace, "how long a named profile's supervisor waits, after the gateway serving the profile went, before starting its own")
	return cmd
}

func runSupervisor(cmd *cobra.Command, g *globals, f *runFlags, args []string) error {
	if f.asService && !service.SupportsRunAsService() {
		return errors.New("--service is for the Windows service manager; systemd and launchd run `hermes-supervisor run` as it is")
	}
	// A log reader that dies (`run 2>&1 | logger`) must not take the
	// supervisor with it: its log lines are then lost, the gateway is not.
	if sigs := signals.Ignored(); len(sigs) > 0 {
		signal.Ignore(sigs...)
	}
	g.runFlags = cmd.Flags()
	layout, err := g.layout()
	if err != nil {
		return err
	}
	logTo := zapcore.Lock(os.Stderr)
	switch {
	case f.logFile != "":
		if logTo, err = rotatingLog(f.logFile, "--log-file "+f.logFile, "pass --log-file a regular file, or a path that does not exist yet"); err != nil {
			return err
		}
	case f.asService:
		// A Windows service has no stderr: log to a rotating file in the home.
		p := filepath.Join(layout.Home, "hermes-supervisor.log")
		if logTo, err = rotatingLog(p, "the service's log file "+p, "the service writes its log there"); err != nil {
			return err
		}
	}
	log, queues, err := g.logger(logTo, !f.asService && f.logFile == "", true)
	if err != nil {
		return err
	}
	// Made here, so that every line of this run (the subreaper's, the
	// service notifier's) keeps the supervisor's held exit line in place.
	log, hold := supervisor.HoldLines(log)
	hold.HoldWrites(queues...)
	defer log.Sync() //nolint:errcheck // stderr sync fails on terminals

	// Layout, address and environment are set again once the home and
	// lock dir are resolved; Validate needs them before.
	cfg := supervisor.Config{Layout: layout, ControlAddress: ctlsock.Address(layout.Home), ControlUsers: f.controlUsers, LineHold: hold}
	// One precedence rule: a flag the user set, else the config file, else
	// the flag's default.
	fl := cmd.Flags()
	for name, v := range g.file.FlagValues() {
		if !fl.Changed(name) {
			if err := fl.Set(name, v); err != nil {
				return fmt.Errorf("config file: %s: %w", name, err)
			}
		}
	}
	cfg.Policy, cfg.StopTimeout, cfg.ReadyTimeout, cfg.RequestTimeout = f.policy, f.stopTimeout, f.readyTimeout, f.ctlTimeout
	cfg.MaxStopExtension = f.maxExtension
	cfg.OutputBurst, cfg.OutputInterval = f.outBurst, f.outInterval
	if cfg.Watchdog, cfg.HangAfter, err = hangSettings(fl.Changed("watchdog"), f); err != nil {
		return err
	}
	cfg.OwnWatchdog = ownWatchdog(os.Getenv, os.Getpid())
	spare := newSpareP()
	cfg.SweepWorkers, cfg.SweepFanOut = spare.chosen, spare.lend
	// Under the Windows service manager the supervisor's READY=1 (and
	// STOPPING=1) go to the service handler too: the SCM's Running then
	// means the gateway is ready, as systemd's active does.
	var scm *service.Notifications
	var also []func(string)
	if f.asService {
		scm = service.NewNotifications()
		also = append(also, scm.Notify)
	}
	cfg.Notify, cfg.OnTransition = serviceNotifier(log, also...)
	if cfg.Command, err = gatewayCommand(g, f, args, layout.Home, log); err != nil {
		return err
	}
	// Everything that can be refused is refused before anything is
	// created: a bad setting or a held home leaves no directory behind.
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid settings: %w", err)
	}
	// The home and lock dir are resolved here, once: a link the user owns
	// is followed, and from now on the supervisor, its control endpoint and
	// the gateway work in its target.
	asked := layout.Home
	resolved, created, err := supervisor.PrepareHome(layout.Home, "--home")
	if err != nil {
		return permanent(err)
	}
	layout.Home = resolved
	if created {
		log.Info("created home: it did not exist (check --home or HERMES_HOME if this is a typo)", zap.String("home", layout.Home))
	} else if asked != resolved {
		log.Info("the home's path holds a link: supervising its target", zap.String("asked", asked), zap.String("home", resolved))
	}
	lock, err := supervisor.LockHome(cmd.Context(), layout)
	if err != nil {
		return err
	}
	defer lock.Close()
	cfg.HomeLock = lock
	if layout, err = supervisor.PrepareDirs(layout); err != nil {
		return permanent(err)
	}
	cfg.Layout = layout
	// A supervisor listens where its resolved home says; a client given
	// the link tries that address too (supervisor.CallHome).
	cfg.ControlAddress = ctlsock.Address(layout.Home)
	// The gateway gets the home as the user spelled it, as Hermes' own
	// units and resolve_profile_env keep it: Hermes reads the profile and
	// its root from that spelling, and a resolved profile home (its
	// profiles directory a link) is no <root>/profiles/<name> to it.
	cfg.HermesHome = asked
	cfg.Env = append(g.file.Env, "HERMES_HOME="+asked, "HERMES_GATEWAY_LOCK_DIR="+layout.LockDir, "HERMES_SUPERVISED_CHILD=1")

	// Where systemd delegated a cgroup to us (the unit's Delegate=yes), each
	// gateway runs in one of its own, and what it leaves behind goes with
	// it; elsewhere its process group holds its tree, as always. Only now,
	// with the home ours: this moves the supervisor into a child cgroup.
	if cg, err := proctree.DelegatedCgroups(cmd.Context()); err == nil {
		cfg.Cgroups = cg
		log.Info("each gateway runs in a cgroup of its own, taken down when it exits",
			zap.String("cgroup", cg.String()), zap.String("evidence", cg.Evidence()))
	} else if !errors.Is(err, errors.ErrUnsupported) {
		log.Info("no cgroup is delegated to us: the gateway's process group holds its tree", zap.Error(err))
	}
	// As child subreaper (Linux), every orphan of the gateway's tree, in
	// whatever session or group, is re-parented to us: killed with the
	// tree, and reaped here rather than left a zombie. The supervisor
	// starts no child but the gateway, as the Reaper requires.
	if r, err := proctree.BecomeSubreaper(); err == nil {
		cfg.Reaper = r
		go r.Run(cmd.Context(), func(o proctree.Reaped) {
			log.Info("reaped an orphan of the gateway's tree", zap.Int("pid", o.PID), zap.String("name", o.Name), zap.String("how", o.How))
		})
	} else if !errors.Is(err, errors.ErrUnsupported) {
		log.Warn("cannot become a child subreaper: an orphan of the gateway's tree is found only while its parent lives", zap.Error(err))
	}
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	// Asking the installed Hermes whether it takes --external-supervisor
	// costs a Python start-up: under the Windows service manager it is
	// done once the service has reported in, not before.
	newSup := func(ctx context.Context) (*supervisor.Supervisor, error) {
		if supervisor.IsHermesGateway(cfg.Command) {
			argv, ext := supervisor.WithExternalSupervisor(ctx, cfg.Command, cfg.Env, layout.Home, cfg.Reaper)
			cfg.Command, cfg.ExternalSupervisor = argv, &ext
			log.Info("--external-supervisor "+ext.Why, zap.Bool("passed", ext.Passed))
		}
		sup, err := supervisor.New(cfg, log, supervisor.SystemClock{}, prober)
		if err != nil {
			return nil, err
		}
		log.Info("supervising", zap.Strings("command", cfg.Command), zap.String("home", layout.Home),
			zap.String("lock_dir", layout.LockDir), zap.String("control", cfg.ControlAddress))
		return sup, nil
	}
	if f.asService {
		return service.RunAsService(service.NameFor(lockstore.ServiceSuffix(layout.Home)), cfg.StopTimeout, scm, func(ctx context.Context) error {
			sup, err := newSup(ctx)
			if err != nil {
				return err
			}
			return sup.Run(ctx)
		})
	}
	sup, err := newSup(cmd.Context())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals.Shutdown()...)
	defer stop()
	if hup, ok := signals.Reload(); ok {
		hups := make(chan os.Signal, 1)
		signal.Notify(hups, hup)
		defer signal.Stop(hups)
		go func() {
			for range hups {
				sup.Do(ctx, "restart")
			}
		}()
	}
	return sup.Run(ctx)
}

// rotatingLog is the log file at path, rotated at 10 MB with 3 kept
// (platform/logfile): opened at start and at every rotation without
// following a link or blocking on a FIFO, which whoever can write the
// log's directory may plant there. Anything but a regular file (or
// nothing) at path at start is refused with exit 78: only its removal can
// fix it.
func rotatingLog(path, what, fix string) (zapcore.WriteSyncer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", what, err, fix)
	}
	l, err := logfile.Open(path, logMaxSize, logBackups, time.Now)
	switch {
	case errors.Is(err, safefs.ErrNotRegular):
		return nil, &exitError{code: exitConfig, err: fmt.Errorf("%s: %w (a FIFO, link, directory or device is never written through): remove it; %s", what, safefs.ErrNotRegular, fix)}
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %s", what, err, fix)
	}
	return l, nil
}

// The supervisor's own log file rotates at logMaxSize bytes and keeps
// logBackups rotated files.
const (
	logMaxSize = 10 << 20
	logBackups = 3
)

// run's log lines wait in a queue of at most logQueueMax bytes while its
// output takes no writes (a paused terminal): the state machine that logs
// them must not wait with them. At exit the log gets logQueueWait to take
// them.
const (
	logQueueMax  = 4 << 20
	logQueueWait = 2 * time.Second
)

// exitConfig is EX_CONFIG: a refusal no restart can fix. The service
// definitions install writes do not restart a supervisor that exits with
// it (systemd's RestartPreventExitStatus=78).
const exitConfig = 78

// permanent gives a refusal of the home or lock dir that only a person can
// fix (another user's directory or link, a file where a directory should
// be) the exit status exitConfig, so that no service manager restarts it
// every second forever.
func permanent(err error) error {
	if errors.Is(err, safefs.ErrUnsafeDir) || errors.Is(err, supervisor.ErrNotDir) {
		return &exitError{code: exitConfig, err: err}
	}
	return err
}

// serviceNotifier keeps a notify-type service manager (systemd's
// Type=notify) informed: READY=1 once the gateway runs, so that `systemctl
// start` means "the gateway is up", STOPPING=1 when the supervisor stops,
// and every state as STATUS=. Each message also goes to every one of also
// (the Windows service handler's Notifications).
func serviceNotifier(log *zap.Logger, also ...func(string)) (func(string), func(*supervisor.Status)) {
	var warned bool
	notify := func(msg string) {
		if err := sdnotify.Notify(msg); err != nil && !warned {
			warned = true
			log.Warn("cannot tell the service manager our state", zap.Error(err))
		}
		for _, f := range also {
			f(msg)
		}
	}
	return notify, func(st *supervisor.Status) {
		line := "STATUS=" + string(st.State) + ": " + st.Reason
		if st.Child != nil && st.Child.Status != "" {
			line += "; gateway: " + st.Child.Status
		}
		notify(line)
	}
}

// hangSettings turns --watchdog and --hang-after (or the config file's
// watchdog and hang_after) into the supervisor's settings.
func hangSettings(watchdogSet bool, f *runFlags) (watchdog, hangAfter time.Duration, err error) {
	switch {
	case f.watchdog < 0:
		return 0, 0, fmt.Errorf("--watchdog (config key watchdog) must not be negative, got %s: pass a deadline such as 60s, or 0 to turn it off", f.watchdog)
	case f.hangAfter < 0:
		return 0, 0, fmt.Errorf("--hang-after (config key hang_after) must not be negative, got %s: pass a duration such as 120s, or 0 to turn it off", f.hangAfter)
	case watchdogSet && f.watchdog == 0:
		watchdog = supervisor.WatchdogOff
	case watchdogSet:
		watchdog = f.watchdog
	}
	return watchdog, f.hangAfter, nil
}

// ownWatchdog is how often to send WATCHDOG=1 to the service manager that
// started us, when it set WATCHDOG_USEC for us (our unit's WatchdogSec=):
// half the deadline, as sd_watchdog_enabled advises.
func ownWatchdog(getenv func(string) string, pid int) time.Duration {
	usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if p := getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(pid) {
		return 0
	}
	// Past what a Duration holds (292 years) the product would wrap, to
	// a ping every few nanoseconds: saturate instead.
	usec = min(usec, math.MaxInt64/int64(time.Microsecond))
	return time.Duration(usec) * time.Microsecond / 2
}

func gatewayCommand(g *globals, f *runFlags, args []string, home string, log *zap.Logger) ([]string, error) {
	switch {
	case len(args) > 0:
		if f.demo {
			return nil, errors.New("--demo and a COMMAND after -- exclude each other")
		}
		return args, nil
	case f.demo:
		return demoCommand()
	case len(g.file.Command) > 0:
		return g.file.Command, nil
	}
	gw := gatewayArgv(home)
	if _, err := exec.LookPath(gw[0]); err != nil {
		if f.asService {
			// Nobody reads a service's stderr: a demo there would pass
			// for a working gateway.
			return nil, fmt.Errorf("hermes is not on the service's PATH, and a service never runs the demo gateway instead: reinstall the service from a shell where hermes is on PATH, or set \"command\" in the config file: %w", err)
		}
		// Logged, not printed: with --log-format json stderr is one JSON stream.
		log.Warn("hermes is not on PATH; running the built-in demo gateway instead (pass --demo to say so, or -- COMMAND to run another)")
		return demoCommand()
	}
	return gw, nil
}

func demoCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the demo gateway: %w", err)
	}
	return demoCommandBeside(exe), nil
}

// demoGatewayProgram is the demo gateway's own executable, built and
// installed beside ours (cmd/hermes-demo-gateway).
const demoGatewayProgram = "hermes-demo-gateway"

// demoCommandBeside is the demo gateway's command for the supervisor at
// exe: the small program beside it when that is a regular executable file
// of ours or root's (it starts in a third of our own start-up), else our
// own demo-gateway subcommand, which is the same code.
func demoCommandBeside(exe string) []string {
	p := filepath.Join(filepath.Dir(exe), demoGatewayProgram+filepath.Ext(exe))
	if runnableBeside(p) {
		return []string{p}
	}
	return []string{exe, demogateway.Command}
}

// runnableBeside reports whether p is a program the OS would run, by its
// own rules (exec bits; on Windows, a PATHEXT extension).
func runnableBeside(p string) bool {
	_, err := exec.LookPath(p)
	return err == nil
}
