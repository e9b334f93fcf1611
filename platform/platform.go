// Package platform holds the per-OS parts: process trees, signals, file
// locks, the control endpoint and Hermes' default paths.
package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
)

// ErrLocked reports that another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// ErrEndpointInUse reports a live listener already at the address.
var ErrEndpointInUse = errors.New("control endpoint in use by a running supervisor")

// ErrNoEndpoint reports that nothing listens at the address.
var ErrNoEndpoint = errors.New("no supervisor listening")

// ErrUnsafeDir reports a directory that another user can write, or that
// another user owns: nothing in it can be trusted or safely created.
var ErrUnsafeDir = errors.New("directory is not private to this user")

// ErrForeignPeer reports a control endpoint served (or called) by a process
// of another user: someone else bound the address first.
var ErrForeignPeer = errors.New("control endpoint belongs to another user")

// DefaultHermesHome returns Hermes' home: $HERMES_HOME if non-blank, else
// the per-OS default with HERMES_DATA_DIR_SUFFIX appended to its name.
func DefaultHermesHome(getenv func(string) string) (string, error) {
	if h := strings.TrimSpace(getenv("HERMES_HOME")); h != "" {
		return h, nil
	}
	base, name, err := defaultHomeParent(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, name+getenv("HERMES_DATA_DIR_SUFFIX")), nil
}

// WindowsHomeBase and WindowsHomeName are Hermes' home on Windows, when
// HERMES_HOME is unset: %LOCALAPPDATA%\hermes (hermes_constants), the
// name with HERMES_DATA_DIR_SUFFIX appended. The PowerShell script under
// deploy/windows is rendered from them too.
const (
	WindowsHomeBase = "LOCALAPPDATA"
	WindowsHomeName = "hermes"
)

// DefaultLockDir returns Hermes' machine-wide scoped-lock directory.
func DefaultLockDir(getenv func(string) string) (string, error) {
	if d := strings.TrimSpace(getenv("HERMES_GATEWAY_LOCK_DIR")); d != "" {
		return d, nil
	}
	if x := strings.TrimSpace(getenv("XDG_STATE_HOME")); x != "" {
		return filepath.Join(x, "hermes", "gateway-locks"), nil
	}
	home, err := userHome(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "hermes", "gateway-locks"), nil
}

// ControlAddress returns the address the supervisor of home listens at: a
// unix socket, or on Windows a named pipe, that depends only on home and
// the effective user, never on the caller's environment.
func ControlAddress(home string) string { return controlAddresses(home)[0] }

// ControlAddresses returns every address a supervisor of home may listen
// at, ControlAddress(home) first, then the ones a different state of the
// system or an older version would have chosen: a client tries them all
// before it concludes that no supervisor runs.
func ControlAddresses(home string) []string { return controlAddresses(home) }

func homeHash(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	sum := sha256.Sum256([]byte(normalizeHome(home)))
	return hex.EncodeToString(sum[:])[:16]
}
