package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// HermesStopWait is how long StopHermes waits for Hermes' gateway to act
// on the planned-stop marker before it kills the gateway's tree: Hermes'
// own `gateway stop` waits as long on Windows (gateway_windows.py).
const HermesStopWait = 30 * time.Second

// hermesKillWait bounds the wait for a killed tree's root to be gone.
const hermesKillWait = 10 * time.Second

// ErrHermesStillRuns reports a Hermes gateway StopHermes could not stop, or
// may not touch; the error says which and what to do.
var ErrHermesStillRuns = errors.New("the gateway Hermes itself runs still holds the home")

// HermesStop is a stop of the gateway Hermes itself runs for a home: its
// Scheduled Task's detached python.exe on Windows, a detached `hermes
// gateway run` anywhere.
type HermesStop struct {
	Layout lockstore.Layout
	Log    *zap.Logger
	// Wait is how long the gateway gets after the marker; 0 means
	// HermesStopWait.
	Wait time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// UID is the only user whose gateway may be stopped: the user the
	// service runs as. nil means this process's real uid. Under sudo the
	// home may name another user's (a config file's "home", a kept
	// HERMES_HOME), whose gateway Hermes' own stop could not signal.
	// Where processes have no uid (Windows) it is not checked.
	UID *int
}

// StopHermes stops the gateway of the home that Hermes' own files say
// runs, as Hermes' own `gateway stop` does and stricter: the running
// record (gateway.pid or the lock's, judged by Hermes' rules) must carry a
// start time that the live process has, and that process must run a
// gateway command line the record matches; only then is the planned-stop
// marker written (so the gateway exits 0 and records `stopped`), sent
// SIGTERM on POSIX, given h.Wait to exit, and then its tree killed by the
// pinned process, proven once more. A gateway started by a supervisor (its
// environment carries EnvNonce) is left to that supervisor. It returns nil
// when no gateway runs.
func (h HermesStop) StopHermes(ctx context.Context) error {
	now := h.Now
	if now == nil {
		now = time.Now
	}
	wait := h.Wait
	if wait <= 0 {
		wait = HermesStopWait
	}
	log := h.Log
	if log == nil {
		log = zap.NewNop()
	}
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	store := lockstore.New(h.Layout, prober, log, now)
	e, ok := store.Running(ctx)
	if !ok {
		return nil
	}
	if e.Record == nil {
		return fmt.Errorf("%w: %s is held (%s) and no record names the process: stop it with `hermes gateway stop`, then rerun",
			ErrHermesStillRuns, e.Path, e.Reason)
	}
	rec := procstate.Identity{PID: e.Record.PID, StartTime: e.Record.StartTime, Argv: e.Record.Argv}
	if rec.StartTime == nil {
		return fmt.Errorf("%w: %s names pid %d without a start time, so nothing proves that pid is the gateway: stop it with `hermes gateway stop`, then rerun",
			ErrHermesStillRuns, e.Path, rec.PID)
	}
	if err := h.prove(ctx, prober, rec, now); err != nil {
		return fmt.Errorf("%w: %s names %s, and nothing proves it is the gateway (%w): stop it with `hermes gateway stop`, then rerun", ErrHermesStillRuns, e.Path, rec, err)
	}
	if env, err := prober.Environ(ctx, rec.PID); err == nil && carriesNonce(env) {
		// A supervisor's gateway: its service's own stop ends it.
		log.Info("the gateway of the home was started by hermes-supervisor; leaving it to its supervisor", zap.Int("pid", rec.PID))
		return nil
	}
	same := func() bool { return h.prove(ctx, prober, rec, now) == nil }
	f, err := proctree.OpenForeign(rec.PID, same)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHermesStillRuns, rec, err)
	}
	if f == nil {
		return nil // exited meanwhile
	}
	defer f.Close()
	log.Info("stopping Hermes' own gateway of the home: planned-stop marker, then a wait", zap.Int("pid", rec.PID), zap.Duration("wait", wait))
	// Into the home of the user whose gateway this is: under sudo that
	// user may swap a link in its path meanwhile.
	uid := os.Getuid()
	if h.UID != nil {
		uid = *h.UID
	}
	if err := lockstore.WritePlannedStopFor(h.Layout, rec, os.Getpid(), now(), uid); err != nil {
		log.Warn("could not write the planned-stop marker; the gateway will record an unplanned stop", zap.Error(err))
	}
	if err := f.Terminate(); err != nil {
		log.Warn("terminate Hermes' gateway", zap.Error(err))
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	err = f.Wait(wctx)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Proven once more, now that it had its chance: a pid still pinned
	// cannot name another process, but a pin without a handle (darwin)
	// relies on this.
	if !same() {
		return fmt.Errorf("%w: %s changed while it was asked to stop; left alone", ErrHermesStillRuns, rec)
	}
	// Its descendants too run as the service's user, or are spared: a
	// setuid one is not the user's to signal, and Hermes' own stop could not.
	killed, kerr := f.KillTree(func(pid int) bool { return h.checkOwner(ctx, prober, pid) != nil })
	log.Warn("Hermes' gateway did not stop within the wait; killed its tree", zap.Int("pid", rec.PID), zap.Ints("killed", killed), zap.Duration("wait", wait), zap.Error(kerr))
	kctx, cancel := context.WithTimeout(ctx, hermesKillWait)
	defer cancel()
	if err := f.Wait(kctx); err != nil {
		return fmt.Errorf("%w: %s survived a kill (%w): end it in the Task Manager or with kill -9, then rerun", ErrHermesStillRuns, rec, errors.Join(kerr, err))
	}
	return nil
}

// prove checks rec against the live process: the same start time, a
// gateway command line, the record's own command line where it has one,
// and the user the service is for (h.UID).
func (h HermesStop) prove(ctx context.Context, prober *procstate.Prober, rec procstate.Identity, now func() time.Time) error {
	live, err := prober.Look(ctx, rec.PID)
	switch {
	case err != nil:
		return err
	case !procstate.StartTimesEqual(rec.StartTime, live, now()):
		return errors.New("its start time differs from the recorded one")
	case live.Argv == nil:
		return errors.New("its command line cannot be read")
	case !lockstore.IsGatewayArgv(live.Argv):
		return fmt.Errorf("it runs %q, not a gateway", live.Argv)
	case len(rec.Argv) > 0 && !procstate.ArgvMatches(rec.Argv, live.Argv):
		return fmt.Errorf("it runs %q, not the recorded command line", live.Argv)
	}
	return h.checkOwner(ctx, prober, rec.PID)
}

// checkOwner checks that pid runs as the service's user (h.UID), where
// processes have uids.
func (h HermesStop) checkOwner(ctx context.Context, prober *procstate.Prober, pid int) error {
	uid := os.Getuid()
	if h.UID != nil {
		uid = *h.UID
	}
	o, err := prober.Owner(ctx, pid)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case uid < 0:
		return fmt.Errorf("the service's user has no uid (%d) to check it against", uid)
	case err != nil:
		return fmt.Errorf("who it runs as cannot be read: %w", err)
	case o.Real != uid || o.Effective != uid:
		return fmt.Errorf("it runs as %s, not as uid %d, the user this service is for", o, uid)
	}
	return nil
}

// carriesNonce reports whether env holds a supervisor's EnvNonce.
func carriesNonce(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, EnvNonce+"=") {
			return true
		}
	}
	return false
}
