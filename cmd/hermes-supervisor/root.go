package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/journald"
	"github.com/hermes-agent/hermes-supervisor/platform/logqueue"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// globals are the flags every command shares.
type globals struct {
	getenv     func(string) string
	home       string
	profile    string
	lockDir    string
	configPath string
	logFormat  string
	logLevel   string
	file       fileConfig
	// runFlags are run's flags, set by run before it loads the config
	// file: its settings are checked merged with them (checkSettings).
	runFlags *pflag.FlagSet
}

func newRoot(getenv func(string) string) *cobra.Command {
	g := &globals{getenv: getenv}
	root := &cobra.Command{
		Use:           "hermes-supervisor",
		Short:         "Supervise the Hermes gateway without stale-file flap loops",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(debug.ReadBuildInfo()),
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "Hermes home (default $HERMES_HOME, else ~/.hermes)")
	// pflag takes the first back-quoted word of a usage for the value's
	// name in --help: only NAME may be quoted so.
	pf.StringVarP(&g.profile, "profile", "p", "", "Hermes profile `NAME`: <root>/profiles/NAME, as hermes -p NAME selects it (\"default\": the root home); the root is ~/.hermes, or $HERMES_HOME's grandparent when it is <root>/profiles/<name>")
	pf.StringVar(&g.lockDir, "lock-dir", "", "scoped lock directory (default $HERMES_GATEWAY_LOCK_DIR, else $XDG_STATE_HOME/hermes/gateway-locks)")
	pf.StringVar(&g.configPath, "config", "", "JSON config file (default $HERMES_SUPERVISOR_CONFIG, else <home>/hermes-supervisor.json if present)")
	pf.StringVar(&g.logFormat, "log-format", "", "log format: console or json (default console)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newRunCmd(g), newStatusCmd(g), newStopCmd(g), newRestartCmd(g), newSweepCmd(g), newDemoGatewayCmd(g),
		newInstallCmd(g), newUninstallCmd(g), newStartCmd(g))
	return root
}

// buildVersion reports the module version `go install …@version` records
// or, for a build from a checkout, the commit the go tool stamped.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown (built without module information)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel (no version control information)"
	}
	v := "devel " + rev[:min(12, len(rev))]
	if at != "" {
		v += " " + at
	}
	if modified {
		v += " (modified)"
	}
	return v
}

// layout resolves the home and lock directory: flag, then environment, then
// config file, then Hermes' defaults; it also loads the config file.
func (g *globals) layout() (lockstore.Layout, error) {
	home := g.home
	if home == "" {
		h, err := lockstore.DefaultHermesHome(g.getenv)
		if err != nil {
			return lockstore.Layout{}, fmt.Errorf("find the Hermes home: %w: pass --home", err)
		}
		home = h
	}
	if g.profile != "" {
		ph, err := g.profileHome(home)
		if err != nil {
			return lockstore.Layout{}, err
		}
		home = ph
	}
	if err := g.loadConfig(home); err != nil {
		return lockstore.Layout{}, err
	}
	if err := g.checkSettings(); err != nil {
		return lockstore.Layout{}, err
	}
	if g.profile != "" && g.file.Home != "" {
		if err := agreeHome(home, g.file.Home, fmt.Sprintf("config file %s, key \"home\",", g.file.Path)); err != nil {
			return lockstore.Layout{}, fmt.Errorf("--profile %s: %w", g.profile, err)
		}
	}
	if g.home == "" && g.profile == "" && g.getenv("HERMES_HOME") == "" && g.file.Home != "" {
		home = g.file.Home
	}
	lockDir := g.lockDir
	if lockDir == "" && g.getenv("HERMES_GATEWAY_LOCK_DIR") == "" && g.file.LockDir != "" {
		lockDir = g.file.LockDir
	}
	if lockDir == "" {
		d, err := lockstore.DefaultLockDir(g.getenv)
		if err != nil {
			return lockstore.Layout{}, fmt.Errorf("find the lock directory: %w: pass --lock-dir", err)
		}
		lockDir = d
	}
	var err error
	if home, err = filepath.Abs(home); err != nil {
		return lockstore.Layout{}, err
	}
	if lockDir, err = filepath.Abs(lockDir); err != nil {
		return lockstore.Layout{}, err
	}
	return lockstore.Layout{Home: home, LockDir: lockDir}, nil
}

func (g *globals) loadConfig(home string) error {
	path, explicit := g.configPath, true
	if path == "" {
		path = g.getenv("HERMES_SUPERVISOR_CONFIG")
	}
	if path == "" {
		path, explicit = filepath.Join(home, "hermes-supervisor.json"), false
	}
	fc, err := readFileConfig(path)
	if err != nil {
		if !explicit && homeUnusable(path, err) {
			return nil
		}
		return err
	}
	g.file = fc
	return nil
}

// homeUnusable reports whether the implicit config file failed only
// because there is no file, or no usable home to hold one (it is a file, or
// it may not be searched). The command then says what is wrong with the
// home itself, in its own words; an unreadable config file still fails.
func homeUnusable(path string, err error) bool {
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return true
	case errors.Is(err, os.ErrPermission):
		_, serr := os.Stat(path)
		return errors.Is(serr, os.ErrPermission)
	}
	return false
}

// logger builds the logger writing to out; toStderr says out is our
// stderr, which under systemd may be journald's: then the console format
// leaves out the time (journald stamps each line) and, unless a format was
// asked for, entries go over journald's native protocol with their fields
// as journal fields. queued hands out its lines from a goroutine of its
// own (platform/logqueue), so that an out that takes no writes (a paused
// terminal, a pipe nobody reads) never stops the caller, which must then
// Sync before it exits; the queues are returned, for the state machine to
// hold on a restart's path (supervisor.LineHold.HoldWrites).
func (g *globals) logger(out zapcore.WriteSyncer, toStderr, queued bool) (*zap.Logger, []supervisor.HeldWriter, error) {
	format := g.logFormat
	if format == "" {
		format = g.file.LogFormat
	}
	chosen := format != ""
	if format == "" {
		format = "console"
	}
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel)
	}
	toJournal := toStderr && journald.Connected()
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	switch format {
	case "json":
		encoder = zapcore.NewJSONEncoder(enc)
	case "console":
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		if toJournal {
			enc.TimeKey = ""
		}
		encoder = zapcore.NewConsoleEncoder(enc)
	default:
		return nil, nil, fmt.Errorf("--log-format %q: use console or json", format)
	}
	// Entries carry the gateway's output and STATUS= and file names as
	// fields: every line is escaped (see termtext.Encoder).
	lines := termtext.Encoder(encoder)
	var held []supervisor.HeldWriter
	if queued {
		q := logqueue.New(out, lines.Clone(), logQueueMax, logQueueWait)
		out, held = q, append(held, q)
	}
	core := zapcore.NewCore(lines, out, level)
	if toJournal && !chosen {
		if jc, ok := journald.NewCore(level, core); ok {
			core = jc
			if h, ok := jc.(supervisor.HeldWriter); ok {
				held = append(held, h)
			}
		}
	}
	return zap.New(core), held, nil
}
