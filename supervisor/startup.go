package supervisor

import (
	"errors"
	"fmt"
	"os"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// ErrHomeDeleted reports that the home disappeared while a supervisor
// that had already worked in it was running.
var ErrHomeDeleted = errors.New("the home was deleted under the running supervisor")

// errUnusableDir reports a home or lock dir the gateway cannot work in
// right now: missing, read-only or full. It is not the gateway's fault and
// does not count toward the crash loop.
var errUnusableDir = errors.New("directory unusable")

// minFreeSpace is the room below which the home or lock dir counts as full.
const minFreeSpace = 1 << 20

// probeDirs checks, by doing it, that a file can be created and removed in
// the home and the lock dir. Permission bits, read-only mounts, a full disk
// and a deleted directory all answer the same way.
func (s *Supervisor) probeDirs() error {
	// Hermes makes its lock dir when missing; so do we. Not the home: a
	// missing home is a mistake or a deletion, and making an empty one
	// would hide it.
	if _, err := os.Stat(s.cfg.Layout.Home); err == nil {
		_ = os.MkdirAll(s.cfg.Layout.LockDir, 0o700)
	}
	for _, d := range []struct{ path, what string }{{s.cfg.Layout.Home, "home"}, {s.cfg.Layout.LockDir, "lock dir"}} {
		if _, err := os.Stat(d.path); errors.Is(err, os.ErrNotExist) {
			if d.what == "home" && s.homeSeen {
				return fmt.Errorf("%s: %w", d.path, ErrHomeDeleted)
			}
			return fmt.Errorf("%s %s does not exist: %w", d.what, d.path, errUnusableDir)
		}
		// A disk with almost no room is full for the gateway (it logs,
		// writes sessions) even while a probe file still fits.
		if free, err := safefs.FreeSpace(d.path); err == nil && free < minFreeSpace {
			return fmt.Errorf("%s %s: the disk is full (%d KiB free): %w", d.what, d.path, free>>10, errUnusableDir)
		}
		f, err := os.CreateTemp(d.path, ".hermes-supervisor-probe-*")
		if err != nil {
			return fmt.Errorf("%s %s: cannot create a file (read-only or full?): %w: %w", d.what, d.path, errUnusableDir, err)
		}
		name := f.Name()
		_, werr := f.Write([]byte("probe\n"))
		cerr := f.Close()
		rerr := os.Remove(name)
		if err := errors.Join(werr, cerr, rerr); err != nil {
			return fmt.Errorf("%s %s: cannot write and remove a file (full?): %w: %w", d.what, d.path, errUnusableDir, err)
		}
	}
	s.homeSeen = true
	return nil
}

// startupFailed waits for the environment to recover: a read-only, full or
// missing directory is retried with backoff, and never counts as a crash.
func (s *Supervisor) startupFailed(err error) {
	s.startFails++
	delay := max(s.cfg.Policy.delay(s.startFails+1, s.rnd), s.cfg.Policy.InitialBackoff)
	s.startupError = err.Error()
	reason := "start-up failure, not counted as a crash: " + err.Error()
	if errors.Is(err, ErrHomeDeleted) {
		reason = "the home was deleted under the running supervisor; waiting for it to come back: " + s.cfg.Layout.Home
	}
	s.scheduleStart(delay, fmt.Sprintf("%s; retrying in %s", reason, delay.Round(1e6)))
}
