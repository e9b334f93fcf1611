//go:build unix

package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// LockFile takes Hermes' exclusive, non-blocking gateway lock on f.
func LockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), ErrLocked)
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
}

// UnlockFile releases the lock taken by LockFile.
func UnlockFile(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

// IgnoredSignals returns the signals a supervisor must not die of: SIGPIPE,
// which a write to a log pipe whose reader died would otherwise deliver.
func IgnoredSignals() []os.Signal { return []os.Signal{unix.SIGPIPE} }

// ShutdownSignals returns the signals that ask a supervisor to stop.
func ShutdownSignals() []os.Signal { return []os.Signal{unix.SIGTERM, unix.SIGINT} }

// RestartSignal returns the signal that asks a Hermes gateway to restart.
func RestartSignal() (os.Signal, bool) { return unix.SIGUSR1, true }

// ReloadSignal returns the signal on which the supervisor restarts its child.
func ReloadSignal() (os.Signal, bool) { return unix.SIGHUP, true }

// TerminateSignal returns the gateway's stop signal.
func TerminateSignal() (os.Signal, bool) { return unix.SIGTERM, true }

func defaultHomeParent(getenv func(string) string) (string, string, error) {
	h, err := userHome(getenv)
	return h, ".hermes", err
}

func userHome(getenv func(string) string) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}

func normalizeHome(h string) string { return h }

// maxSocketPath stays under sun_path (108 on Linux, 104 on macOS).
const maxSocketPath = 100

// ControlAddress returns the unix socket of the supervisor of home.
func ControlAddress(home string) string {
	p := filepath.Join(home, "hermes-supervisor.sock")
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if len(p) < maxSocketPath {
		return p
	}
	return filepath.Join(os.TempDir(), "hermes-supervisor-"+strconv.Itoa(os.Getuid())+"-"+homeHash(home)+".sock")
}

// ListenControl listens on the unix socket addr, reachable only by the
// current user (mode 0600 from creation on). users, Windows SIDs, mean
// nothing here.
func ListenControl(addr string, users ...string) (net.Listener, error) {
	if c, err := net.Dial("unix", addr); err == nil {
		c.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, ErrEndpointInUse)
	}
	// Nobody answers: whatever is there is a leftover of a dead supervisor.
	if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", addr, err)
	}
	// The umask makes the socket 0600 as bind creates it. No chmod by path
	// follows: between bind and chmod the path could be swapped for a
	// link, and the chmod would land on the link's target.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", addr)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// DialControl connects to the unix socket addr.
func DialControl(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		return nil, fmt.Errorf("dial %s: %w", addr, ErrNoEndpoint)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, fmt.Errorf("dial %s: %w", addr, os.ErrPermission)
	}
	return nil, fmt.Errorf("dial %s: %w", addr, err)
}
