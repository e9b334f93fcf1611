package lockstore

import (
	"path/filepath"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// DefaultHermesHome returns Hermes' home: $HERMES_HOME if non-blank, else
// the per-OS default with HERMES_DATA_DIR_SUFFIX appended to its name.
// Hermes strips HERMES_HOME with str.strip() (_get_process_hermes_home),
// whose white space includes \x1c-\x1f: a home strings.TrimSpace left
// them on would be a directory the gateway we start never writes to.
func DefaultHermesHome(getenv func(string) string) (string, error) {
	if h := pyparse.Strip(getenv("HERMES_HOME")); h != "" {
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

// DefaultLockDir returns Hermes' machine-wide scoped-lock directory, as
// _get_lock_dir finds it: HERMES_GATEWAY_LOCK_DIR and XDG_STATE_HOME are
// taken as they are, white space and all, when not empty (Hermes strips
// neither), so that a gateway started by hand with the same environment
// shares our lock dir and its token locks stay in sight. (Hermes would
// also take an XDG_STATE_HOME set to "" for "."; getenv cannot tell it
// from unset, so that one falls back to the default.)
func DefaultLockDir(getenv func(string) string) (string, error) {
	if d := getenv("HERMES_GATEWAY_LOCK_DIR"); d != "" {
		return d, nil
	}
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "hermes", "gateway-locks"), nil
	}
	home, err := userHome(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "hermes", "gateway-locks"), nil
}
