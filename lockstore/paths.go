package lockstore

import (
	"path/filepath"
	"strings"
)

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
