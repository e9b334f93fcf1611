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

// probeDirs checks that a file can be created and removed in the home and
// the lock dir. It runs before every restart, so it asks the OS rather than
// making a file where it can: a read-only mount, a full disk (bytes or
// inodes) and the permission check a create would meet (mode bits, ACLs,
// the immutable flag, a security module) are each one system call, where a
// probe file costs a create and an unlink in the directory, journalled.
// Where the OS has no permission check to ask (Windows), a probe file is
// made and removed.
func (s *Supervisor) probeDirs() error {
	// Hermes makes its lock dir when missing; so do we. Not the home: a
	// missing home is a mistake or a deletion, and making an empty one
	// would hide it. Each is looked at once: this runs before every
	// restart.
	_, homeErr := os.Stat(s.cfg.Layout.Home)
	_, lockErr := os.Stat(s.cfg.Layout.LockDir)
	if homeErr == nil && errors.Is(lockErr, os.ErrNotExist) {
		_ = os.MkdirAll(s.cfg.Layout.LockDir, 0o700)
		_, lockErr = os.Stat(s.cfg.Layout.LockDir)
	}
	for _, d := range []struct {
		path, what string
		err        error
	}{{s.cfg.Layout.Home, "home", homeErr}, {s.cfg.Layout.LockDir, "lock dir", lockErr}} {
		if errors.Is(d.err, os.ErrNotExist) {
			if d.what == "home" && s.homeSeen {
				return fmt.Errorf("%s: %w", d.path, ErrHomeDeleted)
			}
			return fmt.Errorf("%s %s does not exist: %w", d.what, d.path, errUnusableDir)
		}
		if err := dirUsable(d.path, d.what); err != nil {
			return err
		}
	}
	s.homeSeen = true
	return nil
}

// dirUsable checks one directory for probeDirs.
func dirUsable(path, what string) error {
	// A disk with almost no room is full for the gateway (it logs,
	// writes sessions) even while a probe file still fits.
	if room, err := safefs.RoomIn(path); err == nil {
		switch {
		case room.ReadOnly:
			return fmt.Errorf("%s %s: the file system is mounted read-only: %w", what, path, errUnusableDir)
		case room.Bytes < minFreeSpace:
			return fmt.Errorf("%s %s: the disk is full (%d KiB free): %w", what, path, room.Bytes>>10, errUnusableDir)
		case room.Files == 0:
			return fmt.Errorf("%s %s: the disk is full (no inodes left): %w", what, path, errUnusableDir)
		}
	}
	err := safefs.MayWrite(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("%s %s: cannot create a file (read-only or no permission?): %w: %w", what, path, errUnusableDir, err)
	}
	f, err := os.CreateTemp(path, ".hermes-supervisor-probe-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot create a file (read-only or full?): %w: %w", what, path, errUnusableDir, err)
	}
	name := f.Name()
	_, werr := f.Write([]byte("probe\n"))
	cerr := f.Close()
	rerr := os.Remove(name)
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return fmt.Errorf("%s %s: cannot write and remove a file (full?): %w: %w", what, path, errUnusableDir, err)
	}
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
