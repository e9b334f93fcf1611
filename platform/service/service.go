// Package service installs hermes-supervisor as the operating system's
// service: a systemd unit on Linux, a launchd agent on macOS, a service of
// the Windows service control manager on Windows. Every action is
// first a Plan (the files to write and the commands to run), so that
// `--dry-run` shows exactly what would happen and tests can read it.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

// Name is the service's name: the systemd unit's stem. It is not Hermes'
// own hermes-gateway*.service, which Hermes rewrites at every boot.
const Name = "hermes-supervisor"

// Label is the launchd label of the agent.
const Label = "ai.hermes.supervisor"

// Config is what a service definition needs to know.
type Config struct {
	// Exe is the absolute path of the hermes-supervisor binary.
	Exe string
	// Home is the Hermes home the service supervises.
	Home string
	// Suffix tells this home's service apart from other profiles' (see
	// NameFor): the profile name of a named profile's home, "" for a root
	// home.
	Suffix string
	// LockDir is the scoped lock directory; empty means Hermes' default.
	LockDir string
	// ConfigFile is the absolute path of the config file the service's
	// run reads, when it is not the home's own hermes-supervisor.json
	// (which run reads anyway); empty leaves run's default.
	ConfigFile string
	// System installs for the whole machine instead of the current user.
	System bool
	// StopTimeout is the supervisor's own stop timeout; the service
	// manager waits longer than this before killing it.
	StopTimeout time.Duration
	// StopWait is how long a stop of the installed service waits where
	// the service manager leaves the wait to us (the Windows SCM): what
	// the running supervisor says its stop may take, or stop's --timeout.
	// Zero: StopTimeout and the grace the service manager gives.
	StopWait time.Duration
	// UserHome is the installing user's home directory.
	UserHome string
	// UID is the installing user's id (launchd's gui/<uid> domain).
	UID int
	// User, for a system service, is the account the supervisor runs as;
	// empty or "root" runs it as root.
	User string
	// Path is the PATH the service runs with: the installing shell's, so
	// that `hermes` is found where the user found it (~/.local/bin is on
	// no service manager's default PATH). Empty leaves the manager's.
	Path string
	// Demo runs the built-in demo gateway, on purpose.
	Demo bool
	// Command is the gateway command with its program resolved to an
	// absolute path at install (see ResolveCommand); empty leaves `run`'s
	// own choice. The Windows service pins it on its command line, since
	// the service manager passes the service no PATH of the user's.
	Command []string
	// Password is the installing user's Windows password: the service runs
	// as that user (docs/security.md), and the service manager stores it to
	// log on. Unused elsewhere.
	Password string
	// Wait is how long install, start and restart wait for the service to
	// be really running (systemd: active after READY); 0 does not wait.
	Wait time.Duration
	// Watchdog, when positive, is the systemd unit's WatchdogSec=: the
	// supervisor's state machine must ping within it or be restarted.
	Watchdog time.Duration
	// Ready, when set, asks the installed supervisor whether its gateway
	// is ready: nil when it is, else why not. launchd has no readiness
	// protocol (systemd has READY=1, the SCM our Running), so its waits
	// ask the supervisor itself.
	Ready func(ctx context.Context) error
	// StopHermes, when set, stops the gateway Hermes itself still runs for
	// the home (a detached `hermes gateway run`, the python.exe Hermes'
	// Scheduled Task leaves behind): install --migrate calls it once
	// Hermes' own service definitions can no longer start it again. It is
	// set by the caller, since this package cannot read Hermes' records.
	StopHermes func(ctx context.Context) error
	// RunAsInstaller lets a Windows service run as the installing account
	// although another account owns the home (an install elevated through
	// another administrator's UAC credentials; see ErrHomeOwner).
	RunAsInstaller bool
	// StopSupervisor, when set, asks the installed supervisor to stop over
	// its control endpoint: uninstall and reinstall use it where the
	// service manager refuses a stop (Windows, while the service starts).
	StopSupervisor func(ctx context.Context) error
	// Origins says where the values above came from, for the error that
	// refuses one and for the plan's notes (see checkValues).
	Origins Origins
}

// runsAsUser reports whether a system service runs as the installing
// user rather than as root (launchd's UserName, systemd's User=).
func (c Config) runsAsUser() bool { return c.User != "" && c.User != "root" }

// Validate reports the first setting a service cannot be built from.
// perUserDir says whether the manager keeps a user's service definition
// in the user's home (systemd and launchd do; the Windows SCM does not).
func (c Config) Validate(perUserDir bool) error {
	switch {
	case !filepath.IsAbs(c.Exe):
		return fmt.Errorf("service: binary path %q is not absolute", c.Exe)
	case !filepath.IsAbs(c.Home):
		return fmt.Errorf("service: Hermes home %q is not absolute: pass --home an absolute path", c.Home)
	case c.LockDir != "" && !filepath.IsAbs(c.LockDir):
		return fmt.Errorf("service: lock dir %q is not absolute: pass --lock-dir an absolute path", c.LockDir)
	case c.ConfigFile != "" && !filepath.IsAbs(c.ConfigFile):
		return fmt.Errorf("service: config file %q is not absolute: pass --config an absolute path", c.ConfigFile)
	case perUserDir && c.UserHome == "" && !c.System:
		return errors.New("service: no home directory for the user service: set HOME")
	case c.StopTimeout <= 0:
		return errors.New("service: stop timeout must be positive")
	}
	return c.checkSuffix()
}

// stopGrace is how much longer than the supervisor's own stop timeout the
// service manager waits before it kills: the supervisor must always get to
// kill the gateway's tree itself, and release its files.
const stopGrace = 15 * time.Second

// File is one file a plan writes.
type File struct {
	Path string
	Mode os.FileMode
	Data []byte
}

// Step is one thing a plan does: write a file, run a command, or remove a
// file. A step that may fail harmlessly (stopping what is not running) says
// so with MayFail.
type Step struct {
	Write   *File
	Run     []string
	Remove  string
	MayFail bool
	// Do is an action done through an API rather than a command (the
	// Windows service manager); What says what it does, for Print.
	Do   func(ctx context.Context) error
	What string
}

// Plan is what an action does, step by step. Notes are warnings for the
// user, printed before anything happens.
type Plan struct {
	Notes []string
	Steps []Step
}

func (p *Plan) write(path string, mode os.FileMode, data []byte) {
	p.Steps = append(p.Steps, Step{Write: &File{Path: path, Mode: mode, Data: data}})
}

func (p *Plan) run(argv ...string) { p.Steps = append(p.Steps, Step{Run: argv}) }

func (p *Plan) do(what string, f func(ctx context.Context) error) {
	p.Steps = append(p.Steps, Step{Do: f, What: what})
}

// stopHermes adds, with migrate, the step that stops the gateway Hermes
// itself runs for the home (see Config.StopHermes).
func (p *Plan) stopHermes(c Config, migrate bool) {
	if !migrate || c.StopHermes == nil {
		return
	}
	p.do("stop the gateway Hermes itself still runs for "+c.Home+", as `hermes gateway stop` does: planned-stop marker, up to 30 s, then its process tree, proven by its recorded start time", c.StopHermes)
}

func (p *Plan) try(argv ...string) { p.Steps = append(p.Steps, Step{Run: argv, MayFail: true}) }

func (p *Plan) remove(path string) { p.Steps = append(p.Steps, Step{Remove: path}) }

// Print writes the plan for a human: every file in full and every command
// line, in the order Apply acts. Paths, names and values in it may come
// from the user's files (a home, a unit's name): every line passes through
// termtext, so a control character in one is shown, never acted on.
func (p Plan) Print(w io.Writer) error {
	var b strings.Builder
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", termtext.Line(n))
	}
	for _, s := range p.Steps {
		switch {
		case s.Write != nil:
			fmt.Fprintf(&b, "write %s (mode %04o):\n", termtext.Quote(s.Write.Path), s.Write.Mode.Perm())
			for line := range strings.Lines(string(s.Write.Data)) {
				b.WriteString(termtext.Line(strings.TrimSuffix(line, "\n")))
				b.WriteByte('\n')
			}
		case s.Run != nil:
			fmt.Fprintf(&b, "run %s", termtext.Line(Join(s.Run)))
			if s.MayFail {
				b.WriteString("   # may fail: nothing to undo")
			}
			b.WriteByte('\n')
		case s.Do != nil:
			fmt.Fprintf(&b, "do %s\n", termtext.Line(s.What))
		default:
			fmt.Fprintf(&b, "remove %s\n", termtext.Quote(s.Remove))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrUnsupported reports a service manager this build cannot drive.
var ErrUnsupported = errors.New("service installation is not supported here")

// ErrStopRefused reports a service manager that would not pass a stop to
// a service that is still starting (Windows documents ControlService as
// refusing controls to a start-pending service, although it delivers the
// ones a service accepts, as Wine does): `stop` then asks the supervisor
// over its control endpoint, which ends the service as well.
var ErrStopRefused = errors.New("the service manager refused to stop the service while it starts")

// ErrNotRunning reports a service that did not come up after install or
// start; the error says why, with its last log lines.
var ErrNotRunning = errors.New("the service is not running")

// Definition is one installed service definition of ours.
type Definition struct {
	// System says whether it is the machine's (or the user's) service.
	System bool
	// Home is the Hermes home it supervises; empty when unreadable.
	Home string
	// Path is the file (or service name) that defines it.
	Path string
}

// New returns the service manager of this system: Systemd on Linux,
// Launchd on macOS, SCM on Windows; on any other system, one whose every
// action fails with ErrUnsupported, since there the supervisor runs under
// whatever init system starts `hermes-supervisor run`.
func New() Manager { return newManager() }

// Manager turns service actions into plans for one service manager.
type Manager interface {
	// Installed lists the definitions of ours that exist, the user's
	// first: `start`, `stop` and `uninstall` act on the one there is.
	Installed(c Config) []Definition
	// Install defines and starts the service; with migrate it also
	// disables Hermes' own gateway services for this user.
	Install(c Config, migrate bool) (Plan, error)
	// Uninstall stops and removes the service.
	Uninstall(c Config) (Plan, error)
	// Control starts, stops or restarts the installed service.
	Control(c Config, verb string) (Plan, error)
}

// WaitsOnStop reports whether this OS's service manager leaves the wait
// for a stopped service to us, which then waits Config.StopWait (the
// Windows SCM): only then is the supervisor asked how long its stop may
// take.
func WaitsOnStop() bool { return waitsOnStop }

// MayControl reports whether this process may start and stop the service
// of that scope itself: anyone their own, only root (an administrator) the
// machine's.
func MayControl(system bool) bool { return !system || isAdmin() }

// wait adds the plan's last step when c.Wait is set: wait for the service
// to run, through the manager's own view of it.
func (p *Plan) wait(c Config, what string, f func(ctx context.Context) error) {
	if c.Wait <= 0 {
		return
	}
	p.Steps = append(p.Steps, Step{What: fmt.Sprintf("wait up to %v until %s", c.Wait, what), Do: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, c.Wait)
		defer cancel()
		return f(ctx)
	}})
}

// poll calls check every interval until it says done or fails, or ctx
// ends; it is how a client waits on a service manager that has no event
// stream we can read (systemctl, launchctl and the SCM are all asked).
func poll(ctx context.Context, interval time.Duration, check func() (done bool, err error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if done, err := check(); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// tailFile returns the last n lines of the file at path, for an error that
// says why a service did not come up; empty when it cannot be read, or,
// with owner not negative, when it is not owner's: root reading back a
// log in the user's own directory shows nothing the user linked there (a
// hard link to a file of root's, or a link of theirs to root's directory).
func tailFile(path string, n, owner int) string {
	data, st, err := safefs.ReadTail(path, tailMax)
	if err != nil {
		return ""
	}
	if o := st.Owner(); owner >= 0 && (o == nil || int64(*o) != int64(owner)) {
		return ""
	}
	return lastLines(string(data), n)
}

// tailMax is how much of a log's end tailFile reads: far more than the
// lines it shows, and never the whole of a 10 MB log.
const tailMax = 64 << 10

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Join quotes argv as one shell command line, for display and pasting.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' || r == '@' || r == '%' || r == '+' || r == ',' ||
				(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// globSorted lists the files matching pattern, in order, through glob
// (filepath.Glob when nil): where Hermes' own service definitions are.
func globSorted(glob func(string) ([]string, error), pattern string) []string {
	if glob == nil {
		glob = filepath.Glob
	}
	found, _ := glob(pattern)
	slices.Sort(found)
	return found
}

// runArgs is the supervisor's command line under a service manager.
func runArgs(c Config) []string {
	args := []string{c.Exe}
	if c.Home != "" {
		// Empty only in the files under deploy/: the service's user's
		// home, resolved at run time.
		args = append(args, "--home", c.Home)
	}
	if c.LockDir != "" {
		args = append(args, "--lock-dir", c.LockDir)
	}
	if c.ConfigFile != "" {
		// The service manager's environment has no
		// HERMES_SUPERVISOR_CONFIG, and a file elsewhere than the
		// home is not found by run's default.
		args = append(args, "--config", c.ConfigFile)
	}
	args = append(args, "run")
	if c.StopTimeout > 0 {
		// Zero only in the packaged PowerShell script, which pins one
		// only when given (see powershellInstall); every definition
		// install writes pins it (validate).
		args = append(args, "--stop-timeout", c.StopTimeout.String())
	}
	if c.Demo {
		args = append(args, "--demo")
	}
	return args
}

// PasswordEnv names the environment variable install reads the installing
// user's Windows password from (see Config.Password).
const PasswordEnv = "HERMES_SUPERVISOR_PASSWORD"

// ErrNeedPassword reports a Windows install without the user's password.
var ErrNeedPassword = errors.New("service: the installing user's password is needed")

// ErrNoGateway reports a gateway program that is not on the service's PATH.
var ErrNoGateway = errors.New("gateway program not found")

// ResolveCommand returns argv with its program looked up on path (the
// service's PATH; the current one when path is empty) and made absolute,
// so that the service runs the program install found, whatever PATH the
// service manager gives it. It wraps ErrNoGateway when it is not found.
func ResolveCommand(argv []string, path string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty command: %w", ErrNoGateway)
	}
	var found string
	if path == "" || filepath.IsAbs(argv[0]) {
		found, _ = exec.LookPath(argv[0])
	} else {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue // a relative PATH entry means nothing to a service
			}
			if p, err := exec.LookPath(filepath.Join(dir, argv[0])); err == nil {
				found = p
				break
			}
		}
	}
	if found == "" {
		return nil, fmt.Errorf("%s is not on PATH: %w", argv[0], ErrNoGateway)
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", found, err)
	}
	return append([]string{abs}, argv[1:]...), nil
}

// maxDefinition bounds a service definition we read: ours are under 2 KiB,
// Hermes' own about as small.
const maxDefinition = 256 << 10

// readDefinition reads a service definition as every file of someone
// else's is read: a user's unit dir is theirs to fill, and `sudo
// hermes-supervisor install --system`, stop and uninstall read it as root.
// A symlink (to /dev/zero, to a root-only file), a FIFO, a device or a
// file over maxDefinition is refused, never followed, waited on or
// loaded whole (safefs.ReadRegularFile).
func readDefinition(path string) ([]byte, error) {
	return safefs.ReadRegularFile(path, maxDefinition)
}

// installed lists the user's and the machine's definition of the service
// that exist at path(c), each with the home that home reads from it.
func installed(c Config, path func(Config) string, home func([]byte) string) []Definition {
	var defs []Definition
	for _, system := range []bool{false, true} {
		c := c
		c.System = system
		if !system && c.UserHome == "" {
			continue
		}
		p := path(c)
		data, err := readDefinition(p)
		if err != nil {
			continue
		}
		defs = append(defs, Definition{System: system, Home: home(data), Path: p})
	}
	return defs
}
