// Package demogateway is a stand-in for the Hermes gateway that treats the
// pid, lock and state files exactly as the real one does, so the supervisor
// can be run, demonstrated and tested where Hermes is not installed.
//
// It starts as Hermes' own gateway/status.py does: it judges gateway.pid
// and its scoped lock by the rules lockstore holds (gateway.lock decides
// whether a gateway runs; a stale file is removed), then takes
// gateway.lock, then gateway.pid with O_EXCL, then the scoped lock. With
// -naive it is instead as naive as the gateways that cause flap loops: it
// refuses to start while gateway.pid exists, and trusts a scoped lock's
// pid if that pid merely exists.
//
// Like `hermes`, it accepts `[-p PROFILE] gateway [run|restart]` before its
// flags, so a copy named hermes runs as `hermes gateway`.
package demogateway

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Command is the subcommand name the demo gateway runs under; lockstore
// recognises command lines carrying it as gateways.
const Command = "demo-gateway"

// Scope is the scoped-lock scope the demo gateway claims.
const Scope = "demo-bot-token"

// Exit codes, as Hermes uses them.
const (
	exitOK      = 0
	exitRefused = 1
	exitRestart = 75
)

type options struct {
	home, lockDir  string
	token          string
	exitAfter      time.Duration
	exitCode       int
	noCleanup      bool
	ignoreTerm     bool
	readyDelay     time.Duration
	grandchild     bool
	grandchildFile string
	sleepForever   bool
	naive          bool
	noStartTime    bool
	hangAfter      time.Duration
	serve          string
	host           string
}

// hermesWords drops what `hermes [-p X] gateway [run|restart]` puts before
// the flags.
func hermesWords(args []string) []string {
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-p" || a == "--profile":
			args = args[min(2, len(args)):]
		case strings.HasPrefix(a, "-p=") || strings.HasPrefix(a, "--profile="),
			a == "gateway", a == "run", a == "restart", a == "--external-supervisor":
			args = args[1:]
		default:
			return args
		}
	}
	return args
}

// Main runs the demo gateway with args (after the subcommand name) and
// returns its exit code. getenv supplies HERMES_HOME and
// HERMES_GATEWAY_LOCK_DIR defaults.
func Main(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.home, "home", "", "Hermes home (default $HERMES_HOME or ~/.hermes)")
	fs.StringVar(&o.lockDir, "lock-dir", "", "scoped lock directory (default $HERMES_GATEWAY_LOCK_DIR or Hermes' default)")
	fs.StringVar(&o.token, "token", "", "the bot token whose scoped lock it claims (default demo-token; demo-token-NAME in profile NAME's home)")
	fs.DurationVar(&o.exitAfter, "exit-after", 0, "exit on its own after this long (0: never)")
	fs.IntVar(&o.exitCode, "exit-code", 1, "exit code used by -exit-after")
	fs.BoolVar(&o.noCleanup, "no-cleanup", false, "with -exit-after, exit like a crash, leaving every file behind")
	fs.BoolVar(&o.ignoreTerm, "ignore-term", false, "ignore stop requests (SIGTERM; on Windows the planned-stop marker), like a wedged gateway")
	fs.DurationVar(&o.readyDelay, "ready-delay", 0, "wait this long before writing gateway.pid")
	fs.BoolVar(&o.grandchild, "spawn-grandchild", false, "start a child process of its own, as tools do")
	fs.StringVar(&o.grandchildFile, "grandchild-pid-file", "", "write the grandchild's pid here")
	fs.BoolVar(&o.sleepForever, "sleep", false, "only block until killed (used for the grandchild)")
	fs.DurationVar(&o.hangAfter, "hang-after", 0, "hang (stop pinging and block) this long after running, to show hang detection; also "+EnvHang)
	fs.BoolVar(&o.noStartTime, "no-start-time", false, "record no start_time, as a Hermes that cannot read its own (psutil missing) writes null")
	fs.StringVar(&o.serve, "serve", "", "comma-separated profiles to list as served_profiles in gateway_state.json, as Hermes' multiplexer does")
	fs.StringVar(&o.host, "host", "", "comma-separated profiles to serve as newer Hermes' host gateway: hold host-gateway.lock and publish host-gateway.json in the lock dir")
	fs.BoolVar(&o.naive, "naive", false, "judge files as naive gateways do (refuse while gateway.pid exists), to show a flap loop")
	if err := fs.Parse(hermesWords(args)); err != nil {
		return 2
	}
	if v := getenv(EnvHang); v != "" && o.hangAfter == 0 {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "demo-gateway: %s: %v\n", EnvHang, err)
			return 2
		}
		o.hangAfter = d
	}
	if o.sleepForever {
		// A bare select{} is a deadlock to the runtime once no other
		// goroutine exists, as in the shipped binary: it would die at once.
		for {
			time.Sleep(time.Hour)
		}
	}
	g, err := newGateway(o, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "demo-gateway: %v\n", err)
		return 2
	}
	return g.run()
}

type gateway struct {
	o       options
	layout  lockstore.Layout
	self    procstate.Identity
	log     io.Writer
	notify  *notifier
	lock    *os.File
	scoped  string
	ownsPID bool
	// host is host-gateway.lock, held while this is the host gateway.
	host *os.File
}

func newGateway(o options, getenv func(string) string, stderr io.Writer) (*gateway, error) {
	var err error
	if o.home == "" {
		if o.home, err = lockstore.DefaultHermesHome(getenv); err != nil {
			return nil, err
		}
	}
	if o.token == "" {
		o.token = defaultToken(o.home)
	}
	if o.lockDir == "" {
		if o.lockDir, err = lockstore.DefaultLockDir(getenv); err != nil {
			return nil, err
		}
	}
	self, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Self(context.Background())
	if err != nil {
		return nil, err
	}
	if o.noStartTime {
		self.StartTime = nil
	}
	return &gateway{o: o, layout: lockstore.Layout{Home: o.home, LockDir: o.lockDir}, self: self, log: stderr, notify: newNotifier(getenv)}, nil
}

// defaultToken is the bot token of home's demo gateway: each named
// profile is a bot of its own, as with Hermes, so that demo gateways of
// several profiles run side by side in the lock dir they share instead of
// refusing each other's token; a root home keeps the one token it always had.
func defaultToken(home string) string {
	if name, ok := lockstore.NamedProfile(home); ok {
		return "demo-token-" + name
	}
	return "demo-token"
}

func (g *gateway) say(format string, args ...any) {
	fmt.Fprintf(g.log, "demo-gateway[%d]: %s\n", g.self.PID, fmt.Sprintf(format, args...))
}

func (g *gateway) run() int {
	// Hermes' startup order: runtime lock, then pid file, then platforms.
	if err := os.MkdirAll(g.o.home, 0o700); err != nil {
		g.say("cannot create home: %v", err)
		return exitRefused
	}
	// Handlers first: a signal sent as soon as gateway.pid appears (what
	// "ready" means to the supervisor) must not be lost.
	g.dumpStacks()
	sigs := make(chan os.Signal, 4)
	if term, ok := signals.Terminate(); ok {
		if !g.o.ignoreTerm {
			signal.Notify(sigs, term)
		} else {
			signal.Ignore(term)
		}
	}
	signal.Notify(sigs, os.Interrupt)
	if usr1, ok := signals.Restart(); ok {
		signal.Notify(sigs, usr1)
	}
	if code, ok := g.claim(); !ok {
		g.releaseFiles()
		return code
	}
	g.say("running: gateway.pid and %s claimed", Scope)
	g.notify.ready(g)
	var hangTimer <-chan time.Time
	if g.o.hangAfter > 0 {
		hangTimer = time.After(g.o.hangAfter)
	}
	ticks := g.notify.tickEvery()
	var exitTimer <-chan time.Time
	if g.o.exitAfter > 0 {
		exitTimer = time.After(g.o.exitAfter)
	}
	// Hermes on Windows has no signal handlers: a thread polls the marker.
	var markerPoll <-chan time.Time
	// A wedged gateway (-ignore-term) polls nothing: on Windows the marker
	// is its only stop request, and TestStopTimeoutKillsTree raced the
	// poll against the stop timeout.
	if _, ok := signals.Terminate(); !ok && !g.o.ignoreTerm {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		markerPoll = t.C
	}
	for {
		select {
		case sig := <-sigs:
			switch {
			case sig == os.Interrupt:
				return g.stop(exitOK, "interrupted")
			case isRestart(sig):
				return g.stop(exitRestart, "restart requested")
			default:
				planned, err := consumePlannedStop(g.layout, g.self, time.Now())
				if err != nil {
					g.say("planned-stop marker: %v", err)
				}
				if planned {
					return g.stop(exitOK, "planned stop")
				}
				// Hermes exits 1 on an unplanned SIGTERM without persisting stopped.
				g.releaseFiles()
				g.say("unplanned SIGTERM")
				return exitRefused
			}
		case <-markerPoll:
			if planned, _ := consumePlannedStop(g.layout, g.self, time.Now()); planned {
				return g.stop(exitOK, "planned stop")
			}
		case <-ticks:
			g.notify.tick()
		case <-hangTimer:
			g.hang()
		case <-exitTimer:
			if g.o.noCleanup {
				g.say("crashing with exit %d", g.o.exitCode)
				return g.o.exitCode
			}
			return g.stop(g.o.exitCode, fmt.Sprintf("exiting %d as asked", g.o.exitCode))
		}
	}
}

func isRestart(sig os.Signal) bool {
	usr1, ok := signals.Restart()
	return ok && sig == usr1
}

func (g *gateway) spawnGrandchild() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, Command, "-sleep")
	if err := cmd.Start(); err != nil {
		return err
	}
	g.say("started grandchild pid %d", cmd.Process.Pid)
	if g.o.grandchildFile != "" {
		return lockstore.WriteFileAtomic(g.o.grandchildFile, []byte(fmt.Sprintln(cmd.Process.Pid)), 0o644)
	}
	return nil
}

func (g *gateway) stop(code int, why string) int {
	g.notify.send(g, "STOPPING=1")
	g.releaseFiles()
	state := "stopped"
	if code == exitRestart {
		state = "draining"
	}
	g.writeState(state, &why)
	g.say("%s: exiting %d", why, code)
	return code
}

// releaseFiles removes only this process's own records, as Hermes'
// remove_pid_file and release_scoped_lock do.
func (g *gateway) releaseFiles() {
	if g.scoped != "" {
		if r, err := lockstore.ReadRecord(g.scoped); err == nil && r.PID == g.self.PID {
			_ = os.Remove(g.scoped)
		}
	}
	if g.ownsPID {
		if r, err := lockstore.ReadRecord(g.layout.PIDFile()); err == nil && r.PID == g.self.PID {
			_ = os.Remove(g.layout.PIDFile())
		}
	}
	if g.host != nil {
		rec := filepath.Join(g.o.lockDir, lockstore.HostGatewayRecord)
		if b, err := os.ReadFile(rec); err == nil {
			var r struct{ PID int }
			if json.Unmarshal(b, &r) == nil && r.PID == g.self.PID {
				_ = os.Remove(rec)
			}
		}
		_ = safefs.UnlockFile(g.host)
		_ = g.host.Close()
	}
	if g.lock != nil {
		_ = safefs.UnlockFile(g.lock)
		_ = g.lock.Close()
	}
}

func (g *gateway) writeState(state string, reason *string) {
	err := lockstore.UpdateState(g.layout, time.Now(), func(m map[string]any) {
		rec := lockstore.NewRecord(g.self, g.o.home)
		b, _ := json.Marshal(rec)
		var fields map[string]any
		_ = json.Unmarshal(b, &fields)
		for k, v := range fields {
			m[k] = v
		}
		m["gateway_state"] = state
		if reason != nil {
			m["exit_reason"] = *reason
		} else {
			m["exit_reason"] = nil
		}
		m["platforms"] = map[string]any{"demo": map[string]any{"state": "connected"}}
		if g.o.serve != "" {
			m["served_profiles"] = strings.Split(g.o.serve, ",")
		}
	})
	if err != nil {
		g.say("write gateway_state.json: %v", err)
	}
}

// judge applies lockstore's rules, Hermes' own plus our stricter ones, to
// one file of the home or lock dir; ok is false when it is not there.
func (g *gateway) judge(path string) (lockstore.Entry, bool) {
	s := lockstore.New(g.layout, procstate.NewProber(procstate.Options{StartTolerance: -1}), logfield.Nop{}, time.Now)
	es, _ := s.Scan(context.Background())
	for _, e := range es {
		if e.Path == path {
			return e, true
		}
	}
	return lockstore.Entry{}, false
}
