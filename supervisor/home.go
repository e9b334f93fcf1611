package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// HeldError reports that another supervisor holds the home's supervisor
// lock; PID is 0 when the holder has not written its pid.
type HeldError struct {
	Home string
	PID  int
}

func (e *HeldError) Error() string {
	owner := "another process"
	if e.PID > 0 {
		owner = fmt.Sprintf("pid %d", e.PID)
	}
	return fmt.Sprintf("another hermes-supervisor (%s) already supervises %s: use `hermes-supervisor status`, or stop it first", owner, e.Home)
}

// ErrLockReplaced reports that a running supervisor's lock file was
// unlinked or replaced at its path, so that a second supervisor could lock
// the new file; HomeLock.Recheck returns it once it has taken the file at
// the path again.
var ErrLockReplaced = errors.New("the home's supervisor lock file was removed or replaced")

// lockTries bounds LockHome's retries against a lock file that is
// replaced between its open and its flock: a loop that never wins is an
// attack, and one line beats a hang.
const lockTries = 8

// HomeLock is the home's supervisor lock, held from LockHome until Close.
// Its methods are safe for one goroutine at a time.
type HomeLock struct {
	home, path string
	f          *os.File
}

// LockHome makes the caller the only supervisor of the home, with an
// advisory lock the OS drops if the process dies: a pid file could go
// stale, this cannot. The home must exist; the lock dir is not touched, so
// a refused supervisor leaves no trace. It returns *HeldError when another
// supervisor holds the lock, or when the home's state file names a
// supervisor of this boot that is not proven gone: a lock file any
// process of the user can unlink (logind's cleanup, the gateway) is no
// proof on its own, and a successor that trusted it would stop a live
// supervisor's gateway as a killed one's.
func LockHome(ctx context.Context, l lockstore.Layout) (*HomeLock, error) {
	path := l.SupervisorLock()
	f, err := lockAtPath(ctx, l, path)
	if err != nil {
		return nil, err
	}
	if pid := liveSupervisor(ctx, l); pid != 0 {
		_ = safefs.UnlockFile(f)
		f.Close()
		return nil, &HeldError{Home: l.Home, PID: pid}
	}
	writeLockRecord(f)
	return &HomeLock{home: l.Home, path: path, f: f}, nil
}

// lockAtPath opens and locks the lock file at path, and makes sure the
// file locked is still the one the path names: a file unlinked or
// replaced between the open and the flock would be a lock nobody else can
// see. It retries such a file, at most lockTries times.
func lockAtPath(ctx context.Context, l lockstore.Layout, path string) (*os.File, error) {
	for range lockTries {
		f, err := safefs.OpenLockFile(path, true)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w: check the permissions of the Hermes home", path, err)
		}
		if err := safefs.LockFile(f); err != nil {
			f.Close()
			if errors.Is(err, safefs.ErrLocked) {
				return nil, &HeldError{Home: l.Home, PID: lockOwner(ctx, path)}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if atPath(f, path) {
			return f, nil
		}
		_ = safefs.UnlockFile(f)
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: %w %d times while it was being locked: find the process that removes files in the Hermes home", path, ErrLockReplaced, lockTries)
}

// atPath reports whether the open file f is the file path names, without
// following a final link.
func atPath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Lstat(path)
	return err == nil && os.SameFile(held, named)
}

func writeLockRecord(f *os.File) {
	b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "kind": "hermes-supervisor"})
	_ = safefs.Rewrite(f, append(b, '\n'))
}

// liveSupervisor is the pid of the supervisor the home's state file names
// when it is of this boot and not proven gone by pid, start time and
// command line (an unreadable process counts as alive), else 0.
func liveSupervisor(ctx context.Context, l lockstore.Layout) int {
	st, err := ReadStatusFile(l.SupervisorState())
	if err != nil || st.Supervisor.PID <= 0 || st.Supervisor.PID == os.Getpid() {
		return 0
	}
	// A file of another boot names a pid of that boot; with either boot
	// unknown, the identity alone decides.
	if boot, err := procstate.BootID(); err == nil && boot != "" && st.BootID != "" && st.BootID != boot {
		return 0
	}
	self, argvEqual := st.supervisorSelf()
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	if prober.Liveness(ctx, self, argvEqual).Verdict.Gone() {
		return 0
	}
	return self.PID
}

// Recheck makes sure the lock this supervisor holds is still the file at
// the home's lock path. When that file was unlinked or replaced, it locks
// the file the path names now (creating it if missing), records its pid in
// it, drops the old one and reports retaken. If another process holds the
// new file it keeps the old lock and returns a *HeldError naming that
// process; other failures wrap ErrLockReplaced. It costs two stat calls
// when nothing changed.
func (h *HomeLock) Recheck(ctx context.Context) (retaken bool, err error) {
	if atPath(h.f, h.path) {
		return false, nil
	}
	f, err := safefs.OpenLockFile(h.path, true)
	if err != nil {
		return false, fmt.Errorf("%w, and cannot be opened again: %w", ErrLockReplaced, err)
	}
	if err := safefs.LockFile(f); err != nil {
		f.Close()
		if errors.Is(err, safefs.ErrLocked) {
			return false, &HeldError{Home: h.home, PID: lockOwner(ctx, h.path)}
		}
		return false, fmt.Errorf("%w, and cannot be locked again: %w", ErrLockReplaced, err)
	}
	if !atPath(f, h.path) {
		_ = safefs.UnlockFile(f)
		f.Close()
		return false, fmt.Errorf("%w, and again while it was being locked", ErrLockReplaced)
	}
	writeLockRecord(f)
	_ = safefs.UnlockFile(h.f)
	h.f.Close()
	h.f = f
	return true, nil
}

// Path is the lock file's path.
func (h *HomeLock) Path() string { return h.path }

// Close releases the lock.
func (h *HomeLock) Close() {
	_ = safefs.UnlockFile(h.f)
	_ = h.f.Close()
}

// lockOwner reads the pid the holder of the supervisor lock wrote into it.
// A holder that won the lock a moment ago may not have written it yet, so
// it waits up to a second for it.
func lockOwner(ctx context.Context, path string) int {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		if r, err := lockstore.ReadRecord(path); err == nil {
			return r.PID
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
}

// PrepareHome opens the home as safefs.OpenDir does, creating it when
// missing (created reports that it did, so that a mistyped --home is said
// once), and returns the path it resolved to: a link the user owns is
// followed once, here, and the supervisor works in its target from then
// on. flag names the setting to change in the error; a refusal no restart
// can fix wraps safefs.ErrUnsafeDir or ErrNotDir.
func PrepareHome(home, flag string) (resolved string, created bool, err error) {
	if _, err := os.Lstat(home); errors.Is(err, os.ErrNotExist) {
		created = true
	}
	resolved, err = prepareDir(home, flag)
	return resolved, created, err
}

// PrepareDirs opens and checks the home and creates, opens and checks the
// lock dir as Hermes would, turning the usual mistakes into one actionable
// line each, and returns the layout with both resolved (see PrepareHome).
func PrepareDirs(l lockstore.Layout) (lockstore.Layout, error) {
	var err error
	if l.Home, err = prepareDir(l.Home, "--home"); err != nil {
		return l, err
	}
	if l.LockDir, err = prepareDir(l.LockDir, "--lock-dir"); err != nil {
		return l, err
	}
	return l, nil
}

// ErrNotDir reports a home or lock dir path that names something other
// than a directory.
var ErrNotDir = errors.New("not a directory")

// notDirError is the one line for a path that names a file; it matches
// ErrNotDir without repeating it.
type notDirError struct{ path, flag string }

func (e *notDirError) Error() string {
	return fmt.Sprintf("%s is a file, not a directory: pass %s to a directory", e.path, e.flag)
}

func (e *notDirError) Is(target error) bool { return target == ErrNotDir }

func prepareDir(path, flag string) (string, error) {
	root, resolved, err := safefs.OpenDir(path, true)
	switch {
	case errors.Is(err, safefs.ErrUnsafeDir):
		return "", fmt.Errorf("%w: run the supervisor as the directory's owner, or pass %s to a directory only you can write, on a path only you and root can change", err, flag)
	case errors.Is(err, syscall.ENOTDIR):
		return "", &notDirError{path: path, flag: flag}
	case errors.Is(err, fs.ErrPermission):
		// A component above the directory names itself in err; the
		// line names the directory asked for too.
		var pe *fs.PathError
		if errors.As(err, &pe) && filepath.Clean(pe.Path) != filepath.Clean(path) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return "", fmt.Errorf("%w: fix its permissions, run as its owner, or pass %s to another directory", err, flag)
	case err != nil:
		return "", fmt.Errorf("%w: pass %s to a directory you may write", err, flag)
	}
	defer root.Close()
	if err := probeDir(root, resolved); err != nil {
		return "", fmt.Errorf("%w: fix its permissions, run as its owner, or pass %s to another directory", err, flag)
	}
	return resolved, nil
}

// probeDir checks that the gateway will be able to list, create and remove
// files in dir, by doing it: permission bits, ACLs, read-only mounts and
// root's exemptions all answer the same way. Without this the gateway fails
// on every start and the supervisor backs off forever.
func probeDir(root *os.Root, dir string) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	// One entry proves the listing works; all of them would cost a
	// DirEntry per file, 24 MB at 100 000 lock files.
	_, err = d.ReadDir(1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s cannot be listed: %w", dir, err)
	}
	// A random name, created exclusively: one left by a crash is not
	// reused, and no name another process made is written through.
	name := ".hermes-supervisor-probe-" + strconv.FormatUint(rand.Uint64(), 36)
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	f.Close()
	return safefs.RemoveIn(root, name)
}
