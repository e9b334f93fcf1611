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
)

func newManager() Manager { return SCM{} }

// scmSeams stand in, in tests, for LogonUser and for reading the home's
// owner; nil means the real ones.
type scmSeams struct {
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

// recoveryActions is what the SCM does when the supervisor dies (see
// recoveryDelays).
var recoveryActions = func() []mgr.RecoveryAction {
	var acts []mgr.RecoveryAction
	for _, d := range recoveryDelays {
		acts = append(acts, mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: d})
	}
	return acts
}()

func (SCM) install(c Config, migrate bool) (Plan, error) { return scmSeams{}.install(c, migrate) }

func (m scmSeams) install(c Config, migrate bool) (Plan, error) {
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
			if err := s.SetRecoveryActions(recoveryActions, recoveryReset); err != nil {
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
func (m scmSeams) checkOwner(p *Plan, c Config, installer, account string) error {
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

func (SCM) uninstall(c Config) (Plan, error) {
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

func (SCM) control(c Config, verb string) (Plan, error) {
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

// installed opens the service manager and the service for reading only,
// so that a user who is not an administrator learns it exists (and `stop`
// finds the home it runs for) rather than "nothing installed".
func (SCM) installed(c Config) []Definition {
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
