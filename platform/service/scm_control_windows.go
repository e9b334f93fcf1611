package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// stopWait is how long a stop of the installed service waits for it to be
// stopped: the SCM leaves that wait to us (see Config.StopWait).
func (c Config) stopWait() time.Duration {
	if c.StopWait > 0 {
		return c.StopWait
	}
	return c.StopTimeout + stopGrace
}

func (SCM) uninstall(c Config) (Plan, error) {
	var p Plan
	wait := c.stopWait()
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
	wait := c.stopWait()
	name := c.name()
	start := func(ctx context.Context) error { return startService(ctx, name) }
	stop := func(ctx context.Context) error { return stopService(ctx, name, wait) }
	switch verb {
	case "start":
		p.do("start service "+name, start)
		waitRunning(&p, c)
	case "stop":
		p.do(fmt.Sprintf("stop service %s and wait up to %v until it is stopped", name, wait), stop)
	case "restart":
		p.do(fmt.Sprintf("stop service %s and wait up to %v until it is stopped", name, wait), stop)
		p.do("start service "+name, start)
		waitRunning(&p, c)
	default:
		return p, fmt.Errorf("service: unknown action %q: use start, stop or restart", verb)
	}
	return p, nil
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
