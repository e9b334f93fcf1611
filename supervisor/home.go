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

// LockHome makes the caller the only supervisor of the home, with an
// advisory lock the OS drops if the process dies: a pid file could go
// stale, this cannot. The home must exist; the lock dir is not touched, so
// a refused supervisor leaves no trace. It returns *HeldError when another
// supervisor holds the lock.
func LockHome(ctx context.Context, l lockstore.Layout) (unlock func(), err error) {
	path := l.SupervisorLock()
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
	b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "kind": "hermes-supervisor"})
	_ = safefs.Rewrite(f, append(b, '\n'))
	return func() {
		_ = safefs.UnlockFile(f)
		_ = f.Close()
	}, nil
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
