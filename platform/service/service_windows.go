package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

// New returns the Windows service control manager.
func New() Manager { return SCM{} }

// SCM drives the Windows service control manager through its API. The
// service runs as the user who installs it, never as LocalSystem
// (docs/security.md), with the home, the gateway command and the PATH
// pinned; the control pipe also admits that user.
type SCM struct {
	// logon and owner stand in, in tests, for LogonUser and for reading
	// the home's owner; nil means the real ones.
	logon func(account, password string, typ uint32) error
	owner func(path string) (string, error)
}

// shutdownBudget is how long the gateway gets to stop at system shutdown,
// against the supervisor's usual stop timeout: Windows waits for a
// pre-shutdown service only preshutdownTimeout (set at install), and when
// the supervisor exits its job object takes the gateway down hard.
const (
	shutdownBudget     = 8 * time.Second
	preshutdownTimeout = shutdownBudget + 4*time.Second
)

// Recovery is what the SCM does when the supervisor dies (see
// recoveryDelays).
var Recovery = func() []mgr.RecoveryAction {
	var acts []mgr.RecoveryAction
	for _, d := range recoveryDelays {
		acts = append(acts, mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: d})
	}
	return acts
}()

// Install creates (or updates) the service, sets its recovery actions and
// starts it.
func (m SCM) Install(c Config, migrate bool) (Plan, error) {
	if err := c.validateInstall(false); err != nil {
		return Plan{}, err
	}
	installer, err := ctlsock.CurrentUserSID()
	if err != nil {
		return Plan{}, err
	}
	account, err := currentAccount()
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if err := m.checkOwner(&p, c, installer, account); err != nil {
		return Plan{}, err
	}
	logon := m.logon
	if logon == nil {
		logon = logonUser
	}
	startup := filepath.Join(c.UserHome, "AppData", "Roaming", "Microsoft", "Windows", "Start Menu", "Programs", "Startup")
	tasks, entries := hermesWindowsLaunchers(c.Home, startup, nil, nil)
	for _, task := range tasks {
		if !migrate {
			p.Notes = append(p.Notes, "Hermes' own Scheduled Task "+task+" also restarts the gateway of this home: rerun with --migrate to disable it")
			continue
		}
		p.Notes = append(p.Notes, "ending and disabling Hermes' own Scheduled Task "+task+": hermes-supervisor now restarts the gateway")
		p.try("schtasks", "/End", "/TN", task)
		p.try("schtasks", "/Change", "/TN", task, "/Disable")
	}
	for _, e := range entries {
		// Windows opens every file in the Startup folder at logon, so
		// the entry moves out of it, next to the launcher it starts.
		aside := filepath.Join(c.Home, "gateway-service", filepath.Base(e)+".startup-disabled")
		if !migrate {
			p.Notes = append(p.Notes, "Hermes' Startup-folder launcher "+e+" also starts the gateway of this home at logon: rerun with --migrate to move it aside")
			continue
		}
		p.Notes = append(p.Notes, "moving Hermes' Startup-folder launcher "+e+" to "+aside)
		p.do("move "+e+" to "+aside, func(context.Context) error { return os.Rename(e, aside) })
	}
	args := scmArgs(c, installer)
	name := c.name()
	p.noteOrigins(c)
	p.do("grant "+account+" the right to log on as a service", func(context.Context) error { return grantServiceLogon(installer, account) })
	p.do(fmt.Sprintf("stop service %s if it runs, then create or update it: %s (automatic start, as %s)", name, Join(append([]string{c.Exe}, args...)), account), func(ctx context.Context) error {
		if c.Password == "" {
			return fmt.Errorf("%w: the service runs as %s, not as LocalSystem, and the service manager needs that account's Windows password to log on as it: set %s", ErrNeedPassword, account, PasswordEnv)
		}
		// Checked before the service exists: a wrong password (or a PIN)
		// otherwise fails every start with 1069.
		if err := checkLogon(logon, account, c.Password); err != nil {
			return err
		}
		return waitMarkedForDelete(ctx, name, markedWait, func() error { return createOrUpdate(ctx, c, args, account) })
	})
	// After our own service stopped: a gateway still running is Hermes'.
	p.stopHermes(c, migrate)
	p.do("let "+account+" start, stop and query the service without an elevated shell", func(context.Context) error {
		return withService(name, windows.READ_CONTROL|windows.WRITE_DAC, func(s *mgr.Service) error { return grantInstaller(s.Handle, installer) })
	})
	if c.Path != "" {
		p.do("pin the service's PATH (its registry Environment) to the installing shell's", func(context.Context) error {
			return pinEnvironment(name, []string{"PATH=" + c.Path})
		})
	}
	p.do(fmt.Sprintf("at system shutdown, give the gateway %v to stop (pre-shutdown, %v)", shutdownBudget, preshutdownTimeout), func(context.Context) error {
		return withService(name, windows.SERVICE_CHANGE_CONFIG, func(s *mgr.Service) error {
			info := uint32(preshutdownTimeout / time.Millisecond) // SERVICE_PRESHUTDOWN_INFO: one DWORD
			err := windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_PRESHUTDOWN_INFO, (*byte)(unsafe.Pointer(&info)))
			if errors.Is(err, windows.ERROR_INVALID_LEVEL) || errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
				return nil // Wine's service manager keeps no pre-shutdown timeout; Windows' default then applies
			}
			return err
		})
	})
	p.do("set recovery: restart after 5 s, 10 s, then every 60 s, also after a non-zero exit; reset after a day", func(context.Context) error {
		// Restart actions need SERVICE_START as well as the change right.
		return withService(name, windows.SERVICE_CHANGE_CONFIG|windows.SERVICE_START, func(s *mgr.Service) error {
			if err := s.SetRecoveryActions(Recovery, recoveryReset); err != nil {
				return err
			}
			// Older service managers (and Wine's) lack the flag; the
			// supervisor then exits like a crash on failure, which every
			// service manager recovers from.
			err := s.SetRecoveryActionsOnNonCrashFailures(true)
			if errors.Is(err, windows.ERROR_INVALID_LEVEL) {
				return nil
			}
			return err
		})
	})
	p.Steps = append(p.Steps, Step{What: "register " + name + " as an event log source, for errors before the service starts", MayFail: true,
		Do: func(context.Context) error {
			err := eventlog.InstallAsEventCreate(name, eventlog.Error|eventlog.Warning|eventlog.Info)
			if err != nil && strings.Contains(err.Error(), "already exists") {
				return nil // a reinstall
			}
			return err
		}})
	p.do("start service "+name, func(ctx context.Context) error { return startService(ctx, name) })
	waitRunning(&p, c)
	return p, nil
}

// createOrUpdate creates the service, or stops and updates the one there
// is, to run args as account.
func createOrUpdate(ctx context.Context, c Config, args []string, account string) error {
	return withManager(windows.SC_MANAGER_CONNECT|windows.SC_MANAGER_CREATE_SERVICE, func(sm *mgr.Mgr) error {
		cfg := mgr.Config{StartType: mgr.StartAutomatic, DisplayName: displayName(c.Suffix),
			Description:      "Supervises the Hermes Agent gateway for " + c.Home + " (" + c.name() + ").",
			ServiceStartName: account, Password: c.Password}
		s, err := sm.OpenService(c.name())
		if err == nil {
			// Reinstall: the old binary and arguments must not keep
			// running, so stop first. Then change only the command
			// line, start type and account (mgr's UpdateConfig also
			// sets options that older service managers, and Wine's,
			// reject); the start step below runs the new one.
			defer s.Close()
			if err := stopAndWait(ctx, c, s, c.StopTimeout+stopGrace); err != nil {
				return err
			}
			bin := windows.EscapeArg(c.Exe)
			for _, a := range args {
				bin += " " + windows.EscapeArg(a)
			}
			path, err := windows.UTF16PtrFromString(bin)
			if err != nil {
				return err
			}
			acct, err := windows.UTF16PtrFromString(account)
			if err != nil {
				return err
			}
			pw, err := windows.UTF16PtrFromString(c.Password)
			if err != nil {
				return err
			}
			return windows.ChangeServiceConfig(s.Handle, windows.SERVICE_NO_CHANGE, mgr.StartAutomatic,
				windows.SERVICE_NO_CHANGE, path, nil, nil, nil, acct, pw, nil)
		}
		s, err = sm.CreateService(c.name(), c.Exe, cfg, args...)
		if err != nil {
			return err
		}
		return s.Close()
	})
}

// checkOwner refuses a home that belongs to another account than the
// service's (see checkHomeOwner); a home not created yet, or whose owner
// cannot be read, is noted, not refused.
func (m SCM) checkOwner(p *Plan, c Config, installer, account string) error {
	owner := m.owner
	if owner == nil {
		owner = homeOwner
	}
	if _, err := os.Stat(c.Home); err != nil {
		return nil
	}
	sid, err := owner(c.Home)
	if err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("could not check that %s belongs to %s: %v", c.Home, account, err))
		return nil
	}
	note, err := checkHomeOwner(c.Home, sid, installer, account, isAdmin(), c.RunAsInstaller)
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return err
}

// markedWait bounds how long a reinstall waits for a service marked for
// deletion to go: the SCM deletes it once the last handle to it closes.
const markedWait = 30 * time.Second

// ErrMarkedForDelete reports a service the SCM has marked for deletion and
// keeps while something holds a handle to it.
var ErrMarkedForDelete = errors.New("the service is marked for deletion")

// waitMarkedForDelete runs f, and while it fails because the service is
// marked for deletion (ERROR_SERVICE_MARKED_FOR_DELETE, 1072: an uninstall
// whose service still ran, or services.msc holding it open), runs it again
// until wait ends; then it says what holds it and what to do.
func waitMarkedForDelete(ctx context.Context, name string, wait time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	err := poll(ctx, 500*time.Millisecond, func() (bool, error) {
		last = f()
		if errors.Is(last, windows.ERROR_SERVICE_MARKED_FOR_DELETE) {
			return false, nil
		}
		return true, last
	})
	if err != nil && errors.Is(last, windows.ERROR_SERVICE_MARKED_FOR_DELETE) {
		return fmt.Errorf("%w: service %s is still marked for deletion after %v (%w): something holds it open: close the Services console (services.msc), Event Viewer and any `sc` or PowerShell session that opened it, stop a process of the old service that still runs (Task Manager, hermes-supervisor.exe), then rerun install; if it stays, reboot",
			ErrMarkedForDelete, name, wait, last)
	}
	return err
}

// Uninstall stops the service, waits until the SCM sees it stopped, and
// only then deletes it: a service deleted while it runs is only marked for
// deletion, and a reinstall fails until it is gone.
func (m SCM) Uninstall(c Config) (Plan, error) {
	var p Plan
	wait := c.StopTimeout + stopGrace
	name := c.name()
	p.do(fmt.Sprintf("stop service %s (through the control pipe of %s's supervisor when the service manager refuses, as it does while the service starts), wait up to %v until it is stopped, then delete it", name, c.Home, wait),
		func(ctx context.Context) error {
			return withService(name, windows.SERVICE_STOP|windows.SERVICE_QUERY_STATUS|windows.DELETE, func(s *mgr.Service) error {
				return uninstallService(ctx, c, s, wait)
			})
		})
	p.Steps = append(p.Steps, Step{What: "unregister the event log source " + name, MayFail: true,
		Do: func(context.Context) error { return eventlog.Remove(name) }})
	return p, nil
}

// scmService is the part of mgr.Service that stopping and deleting use:
// the seam where a test stands in for Windows' SCM, which refuses controls
// while a service starts (Wine's passes them on).
type scmService interface {
	Control(svc.Cmd) (svc.Status, error)
	Query() (svc.Status, error)
	Delete() error
}

// uninstallService stops s (see stopAndWait) and deletes it once stopped.
func uninstallService(ctx context.Context, c Config, s scmService, wait time.Duration) error {
	if err := stopAndWait(ctx, c, s, wait); err != nil {
		return fmt.Errorf("%w: not deleted, so that a reinstall does not meet a service marked for deletion", err)
	}
	return s.Delete()
}

// stopAndWait stops s and waits up to wait until it is stopped. When the
// SCM refuses because the service still starts (until its gateway is
// ready, up to a minute), it asks the supervisor through c.StopSupervisor,
// its control pipe, which ends the service too, and waits the same.
func stopAndWait(ctx context.Context, c Config, s scmService, wait time.Duration) error {
	err := stopHandle(ctx, c.name(), s, wait)
	if !errors.Is(err, ErrStopRefused) {
		return err
	}
	if c.StopSupervisor == nil {
		return fmt.Errorf("%w: run `%s`, then rerun", err, c.command("stop"))
	}
	if serr := c.StopSupervisor(ctx); serr != nil {
		return fmt.Errorf("%w, and the supervisor's control pipe failed too: %w", err, serr)
	}
	return waitStopped(ctx, c.name(), s, wait)
}

// Control starts, stops or restarts the installed service.
func (m SCM) Control(c Config, verb string) (Plan, error) {
	var p Plan
	wait := c.StopTimeout + stopGrace
	name := c.name()
	start := func(ctx context.Context) error { return startService(ctx, name) }
	stop := func(ctx context.Context) error { return stopService(ctx, name, wait) }
	switch verb {
	case "start":
		p.do("start service "+name, start)
		waitRunning(&p, c)
	case "stop":
		p.do("stop service "+name+" and wait for it", stop)
	case "restart":
		p.do("stop service "+name+" and wait for it", stop)
		p.do("start service "+name, start)
		waitRunning(&p, c)
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
}

// Installed lists the home's service (named for its profile, see
// NameFor), which is always the machine's. It opens the service manager
// and the service for reading only, so that a user who is not an
// administrator learns it exists (and `stop` finds the home it runs for)
// rather than "nothing installed".
func (m SCM) Installed(c Config) []Definition {
	name := c.name()
	sm, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return nil
	}
	defer windows.CloseServiceHandle(sm)
	wname, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil
	}
	h, err := windows.OpenService(sm, wname, windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return nil
	}
	defer windows.CloseServiceHandle(h)
	d := Definition{System: true, Path: name}
	if bin, err := binaryPath(h); err == nil {
		if args, err := windows.DecomposeCommandLine(bin); err == nil {
			for i, a := range args {
				if a == "--home" && i+1 < len(args) {
					d.Home = args[i+1]
				}
			}
		}
	}
	return []Definition{d}
}

// binaryPath reads the service's command line through QueryServiceConfig
// itself: mgr's Config also asks for options older service managers (and
// Wine's) do not keep, and fails there.
func binaryPath(h windows.Handle) (string, error) {
	var need uint32
	_ = windows.QueryServiceConfig(h, nil, 0, &need)
	if need == 0 {
		return "", errors.New("QueryServiceConfig reported no size")
	}
	buf := make([]byte, need)
	qc := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(h, qc, need, &need); err != nil {
		return "", err
	}
	return windows.UTF16PtrToString(qc.BinaryPathName), nil
}

// waitRunning waits, when c.Wait is set, until the SCM reports the service
// running, which the service does once the gateway is ready (it is
// StartPending until then; see RunAsService), and it stays so a second
// later with the same process. A service that stops after it was seen
// pending or running ends the wait at once with its last log lines.
func waitRunning(p *Plan, c Config) {
	p.wait(c, "service "+c.name()+" is running, its gateway ready", func(ctx context.Context) error {
		return withService(c.name(), windows.SERVICE_QUERY_STATUS, func(s *mgr.Service) error {
			var now svc.Status
			var pid uint32 // the process last seen running
			var seen bool  // the service was seen starting or running
			var since time.Time
			err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
				var err error
				if now, err = s.Query(); err != nil {
					return false, err
				}
				switch {
				case now.State == svc.Running && now.ProcessId == pid:
					return time.Since(since) >= time.Second, nil
				case now.State == svc.Running:
					pid, since, seen = now.ProcessId, time.Now(), true
				case now.State == svc.StartPending:
					pid, seen = 0, true
				case now.State == svc.Stopped && seen:
					return false, notRunning(c, now, "")
				}
				return false, nil
			})
			if err != nil && ctx.Err() != nil {
				return notRunning(c, now, fmt.Sprintf(" after %v", c.Wait))
			}
			return err
		})
	})
}

// notRunning says why the service is not running: the supervisor's own
// state and reason when it still answers (a home held by Hermes' own
// gateway says what to do there), and the log lines that explain it.
func notRunning(c Config, st svc.Status, after string) error {
	log := filepath.Join(c.Home, "hermes-supervisor.log")
	lines := explainingLines(log, 15)
	if lines == "" {
		lines = "(none readable)"
	}
	says := ""
	if c.Ready != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := c.Ready(ctx); err != nil {
			says = fmt.Sprintf("; %v", err)
		}
		cancel()
	}
	return fmt.Errorf("%w: service %s is in state %d (exit code %d)%s%s; its warnings and last log lines:\n%s\nfix the cause (%s has more), then run `%s`",
		ErrNotRunning, c.name(), st.State, st.Win32ExitCode, after, says, lines, log, c.command("start"))
}

func isAdmin() bool { return windows.GetCurrentProcessToken().IsElevated() }

// withManager connects to the service manager with only the rights
// access names: mgr.Connect asks for all of them, which a user who is not
// an administrator never gets, even to start a service they may start.
func withManager(access uint32, f func(*mgr.Mgr) error) error {
	h, err := windows.OpenSCManager(nil, nil, access)
	if err != nil {
		return fmt.Errorf("connect to the service manager: %w (run as an administrator)", err)
	}
	sm := &mgr.Mgr{Handle: h}
	defer sm.Disconnect()
	return f(sm)
}

// withService opens our service name (a home's, see NameFor) with only
// the rights access names.
func withService(name string, access uint32, f func(*mgr.Service) error) error {
	return withManager(windows.SC_MANAGER_CONNECT, func(sm *mgr.Mgr) error {
		wname, err := windows.UTF16PtrFromString(name)
		if err != nil {
			return err
		}
		h, err := windows.OpenService(sm.Handle, wname, access)
		if err != nil {
			return fmt.Errorf("open service %s: %w (is it installed?)", name, err)
		}
		s := &mgr.Service{Name: name, Handle: h}
		defer s.Close()
		return f(s)
	})
}

func startService(_ context.Context, name string) error {
	return withService(name, windows.SERVICE_START, func(s *mgr.Service) error {
		err := s.Start()
		if errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
			return nil
		}
		return err
	})
}

// stopService asks the service name to stop and waits up to wait for it.
func stopService(ctx context.Context, name string, wait time.Duration) error {
	return withService(name, windows.SERVICE_STOP|windows.SERVICE_QUERY_STATUS, func(s *mgr.Service) error {
		return stopHandle(ctx, name, s, wait)
	})
}

// stopHandle stops s (the service name), when it runs, and waits up to
// wait for it.
func stopHandle(ctx context.Context, name string, s scmService, wait time.Duration) error {
	st, err := s.Control(svc.Stop)
	if errors.Is(err, windows.ERROR_SERVICE_CANNOT_ACCEPT_CTRL) && st.State == svc.StartPending {
		return fmt.Errorf("%w: %w", ErrStopRefused, err)
	}
	if errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return nil
	}
	if err != nil {
		return err
	}
	return waitStopped(ctx, name, s, wait)
}

// waitStopped polls s (the service name) until the SCM reports it
// stopped, for up to wait.
func waitStopped(ctx context.Context, name string, s scmService, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		st, err := s.Query()
		return err == nil && st.State == svc.Stopped, err
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("service %s did not stop within %v", name, wait)
	}
	return err
}

// RunAsService runs run as the Windows service name, under the service
// control manager: run's context ends when the SCM asks the service to stop
// (or the machine shuts down); stopTimeout, the supervisor's own, plus the
// same grace the other managers get, is the hint for how long that takes.
// The service is StartPending until note says READY=1, that is until the
// gateway is ready (see Notifications), so that the SCM's Running, and
// `install --wait`, mean what systemd's active means. This is an explicit
// path (run --service) rather than detection, which fails under Wine,
// where services run outside session 0.
func RunAsService(name string, stopTimeout time.Duration, note *Notifications, run func(ctx context.Context) error) error {
	h := &handler{run: run, note: note, stopWait: stopTimeout + stopGrace, shutdownBudget: shutdownBudget,
		checkpointEvery: checkpointEvery, startWaitHint: startWaitHint, crash: crash}
	if err := svc.Run(name, h); err != nil {
		return fmt.Errorf("run as service %s: %w", name, err)
	}
	return h.err
}

// While the service is StartPending it raises its CheckPoint every
// checkpointEvery and promises the next raise within startWaitHint: a
// checkpoint that stops moving for longer than the hint is how the SCM and
// service tools tell a hung start from a slow one. The supervisor's ready
// timeout (60 s by default, or the gateway's EXTEND_TIMEOUT_USEC) bounds
// how long the start stays pending.
const (
	checkpointEvery = 3 * time.Second
	startWaitHint   = 10 * time.Second
)

type handler struct {
	run  func(ctx context.Context) error
	note *Notifications
	// stopWait is the wait hint of a stop: the supervisor's stop timeout
	// and a grace.
	stopWait time.Duration
	// shutdownBudget bounds a stop at system shutdown: Windows waits no
	// longer for a pre-shutdown service, and when Execute returns the
	// process exits and the job object ends the gateway's tree.
	shutdownBudget                 time.Duration
	checkpointEvery, startWaitHint time.Duration
	// crash ends the process after run failed (see crash); tests record.
	crash func(error)
	err   error
}

// crash ends the process without reporting SERVICE_STOPPED: that is what
// the SCM counts as a crash, and recovers from with the recovery actions
// on every Windows version.
func crash(err error) {
	fmt.Fprintln(os.Stderr, "hermes-supervisor:", termtext.Line(err.Error()))
	os.Exit(1)
}

// accepts is every control the service takes, in StartPending as in
// Running: a stop before the gateway is ready must work, and with the
// SCM's own Stop refused, nothing could end a start that never becomes
// ready short of killing the process.
const accepts = svc.AcceptStop | svc.AcceptShutdown | svc.AcceptPreShutdown

func (h *handler) Execute(_ []string, reqs <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	pending := svc.Status{State: svc.StartPending, Accepts: accepts, CheckPoint: 1, WaitHint: uint32(h.startWaitHint / time.Millisecond)}
	status <- pending
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	tick := time.NewTicker(h.checkpointEvery)
	defer tick.Stop()
	ticks, ready, stopping := tick.C, h.note.Ready(), h.note.Stopping()
	// stopPending ends the start: a ready gateway that a stop overtook
	// must not make the service Running again.
	stopPending := func(wait time.Duration) {
		ticks, ready, stopping = nil, nil, nil
		status <- svc.Status{State: svc.StopPending, WaitHint: uint32(wait / time.Millisecond)}
	}
	var budget <-chan time.Time
	for {
		select {
		case <-ticks:
			pending.CheckPoint++
			status <- pending
		case <-ready:
			ticks, ready = nil, nil
			tick.Stop()
			status <- svc.Status{State: svc.Running, Accepts: accepts}
		case <-stopping:
			// The supervisor stops on its own (a `stop` through its
			// control endpoint): the SCM sees the stop as it happens.
			stopPending(h.stopWait)
		case <-budget:
			h.err = errors.New("the gateway did not stop within the shutdown budget; its job object ends it")
			return false, 0
		case err := <-done:
			h.err = err
			if err != nil {
				h.crash(err)
				return false, 1 // reached in tests only
			}
			return false, 0
		case r := <-reqs:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop:
				stopPending(h.stopWait)
				cancel()
			case svc.PreShutdown, svc.Shutdown:
				// The machine goes down: the gateway gets the marker and a
				// short budget, not the full stop timeout.
				stopPending(h.shutdownBudget)
				cancel()
				if budget == nil {
					budget = time.After(h.shutdownBudget)
				}
			}
		}
	}
}

// SupportsRunAsService reports whether RunAsService can work here.
func SupportsRunAsService() bool { return true }

// reportEvent writes msg to the Application event log as the source name,
// the service's own (registered at install; an unregistered source still
// logs, with Windows' "description not found" preamble).
func reportEvent(name, msg string) {
	l, err := eventlog.Open(name)
	if err != nil {
		return
	}
	defer l.Close()
	_ = l.Error(1, msg)
}
