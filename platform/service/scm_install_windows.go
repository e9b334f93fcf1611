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
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

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
	if err := c.checkCommandLine(); err != nil {
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
			if err := stopAndWait(ctx, c, s, c.stopWait()); err != nil {
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
