package supervisor

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
)

// Config is everything one supervisor needs; the CLI fills it from flags,
// the environment and the config file.
type Config struct {
	// Command is the gateway's argv; Command[0] is looked up in PATH.
	Command []string
	// ExternalSupervisor says whether Command carries Hermes'
	// --external-supervisor, and why (see WithExternalSupervisor); nil
	// when nobody asked.
	ExternalSupervisor *ExtSup
	// Env is added to the supervisor's own environment for the child.
	Env []string
	// Layout names the Hermes home and lock directory the child uses.
	Layout lockstore.Layout
	// HermesHome is the home as the user spelled it, links and all, when
	// Layout.Home is its resolved target: the gateway's HERMES_HOME, and
	// what the profile and its root are read from, since Hermes reads
	// them from that spelling ("" means Layout.Home).
	HermesHome string
	// Policy decides restarts.
	Policy Policy
	// StopTimeout is how long a stop waits for the gateway before it kills
	// the whole tree. Above Hermes' own watchdog (drain + 60 s) by default.
	StopTimeout time.Duration
	// MaxStopExtension caps what the gateway's EXTEND_TIMEOUT_USEC may add
	// to a stop: the tree is killed at the latest this long after the stop
	// timeout would have passed. Zero honours no extension.
	MaxStopExtension time.Duration
	// ReadyTimeout bounds how long a child may run without writing its pid
	// file before it is treated as running anyway (commands that are not
	// Hermes gateways never write one).
	ReadyTimeout time.Duration
	// HomeLock is the home's supervisor lock the caller holds (LockHome):
	// every write of the state file checks that it is still the file at
	// its path, and takes the path's file again if not. nil: no check.
	HomeLock *HomeLock
	// ControlAddress is where the control endpoint listens; empty disables it.
	ControlAddress string
	// Notify is told when the gateway is ready and when the supervisor is
	// stopping (sd_notify under systemd); nil means nobody listens.
	Notify func(state string)
	// RequestTimeout is how long a control client may take over its request
	// before the endpoint drops it; it bounds what idle clients can hold.
	RequestTimeout time.Duration
	// ControlUsers are Windows SIDs that may use the control endpoint
	// besides SYSTEM and the user the supervisor runs as (a service runs as
	// SYSTEM for the user who installed it). Unix sockets ignore it.
	ControlUsers []string
	// OnTransition, when set, is called from the supervisor's goroutine with
	// a snapshot after every state change, and when the gateway's own
	// status or its watchdog changes; it must not block.
	OnTransition func(*Status)
	// LineHold is the hold HoldLines made with the logger New is given,
	// so that every logger made from it keeps the held exit line in its
	// place (see LineHold); nil: New makes one from that logger.
	LineHold *LineHold
	// Watchdog is the sd_notify keep-alive deadline given to the gateway as
	// WATCHDOG_USEC: positive sets it, WatchdogOff turns it off, zero takes
	// Hermes' gateway.systemd_watchdog_seconds from <home>/config.yaml.
	Watchdog time.Duration
	// HangAfter, when positive, takes the gateway down once Hermes'
	// state/gateway.heartbeat, after naming it, is older than this. For
	// gateways that cannot send sd_notify datagrams (Windows).
	HangAfter time.Duration
	// Cgroups, when set, is the cgroup delegated to the supervisor
	// (proctree.DelegatedCgroups): each gateway then runs in a cgroup of its
	// own under it, and whatever it leaves behind is killed when it exits.
	// nil leaves the gateway's tree to its process group (job object on
	// Windows).
	Cgroups *proctree.Cgroups
	// Reaper, when set, is the supervisor as child subreaper
	// (proctree.BecomeSubreaper): the orphans of each gateway's tree are
	// re-parented to it, and found, killed and reaped with the tree.
	Reaper *proctree.Reaper
	// OwnWatchdog, when positive, is how often the supervisor sends
	// WATCHDOG=1 through Notify: half its service manager's WATCHDOG_USEC.
	OwnWatchdog time.Duration
	// OutputBurst and OutputInterval limit the gateway's output as
	// journald limits a service's: at most OutputBurst lines are logged per
	// OutputInterval, every gateway of the run together, and one line
	// counts what was dropped. Either at zero turns the limit off.
	OutputBurst    int
	OutputInterval time.Duration
	// SweepWorkers bounds the goroutines a sweep keeps busy at once;
	// zero means GOMAXPROCS. Below GOMAXPROCS (as while SweepFanOut has
	// given the runtime a spare P) a P stays idle through a big sweep,
	// and the control endpoint's connections are taken at once: with
	// every P busy, Go looks at the network only every 10 ms.
	SweepWorkers int
	// SweepFanOut, when set, is called as a sweep first has files enough
	// for more than one goroutine, and the function it returns once that
	// sweep is done: run gives the runtime its spare P for that time
	// (lockstore.Store.WithFanOut).
	SweepFanOut func() (done func())

	// stdin is the gateway's standard input: the supervisor's one
	// /dev/null, opened at the first start and shared by every gateway
	// (nil: exec opens it for each start, as it does for a nil Stdin).
	stdin *os.File
	// out is the gateway's stdout and stderr, made while the gateway
	// before it ran (nil: startChild makes them).
	out *outputPipes
	// outLimit is the rate limit the gateway's output shares with every
	// gateway before it (nil: startChild makes one for this gateway, which
	// is nil again when the limit is off).
	outLimit *outputLimit
}

// DefaultStopTimeout is above Hermes' default TimeoutStopSec (70 s).
const DefaultStopTimeout = 75 * time.Second

// DefaultMaxStopExtension is --max-stop-extension's default: room for a
// long drain that keeps asking, never an unbounded stop.
const DefaultMaxStopExtension = 30 * time.Minute

// DefaultReadyTimeout bounds the starting state for commands that never
// write gateway.pid.
const DefaultReadyTimeout = 60 * time.Second

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Command) == 0 || c.Command[0] == "" {
		errs = append(errs, errors.New("no gateway command given"))
	}
	if c.Layout.Home == "" {
		errs = append(errs, errors.New("no Hermes home: set --home or HERMES_HOME"))
	}
	if c.Layout.LockDir == "" {
		errs = append(errs, errors.New("no lock directory: set --lock-dir or HERMES_GATEWAY_LOCK_DIR"))
	}
	if c.StopTimeout <= 0 {
		errs = append(errs, fmt.Errorf("stop timeout must be positive, got %s", c.StopTimeout))
	}
	if c.MaxStopExtension < 0 {
		errs = append(errs, fmt.Errorf("--max-stop-extension must not be negative, got %s", c.MaxStopExtension))
	}
	if c.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ready timeout must be positive, got %s", c.ReadyTimeout))
	}
	if c.ControlAddress != "" && c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("control request timeout must be positive, got %s", c.RequestTimeout))
	}
	if c.OutputBurst < 0 {
		errs = append(errs, fmt.Errorf("--log-rate-limit-burst must not be negative, got %d (0 turns the limit off)", c.OutputBurst))
	}
	if c.OutputInterval < 0 {
		errs = append(errs, fmt.Errorf("--log-rate-limit-interval must not be negative, got %s (0 turns the limit off)", c.OutputInterval))
	}
	if c.SweepWorkers < 0 {
		errs = append(errs, fmt.Errorf("sweep workers must not be negative, got %d (0 means GOMAXPROCS)", c.SweepWorkers))
	}
	if c.HangAfter < 0 {
		errs = append(errs, fmt.Errorf("hang-after must not be negative, got %s", c.HangAfter))
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
