package lockstore

import (
	"path/filepath"
	"testing"
)

// TestEnvPathsReadAsPython: Hermes strips HERMES_HOME with str.strip()
// and takes HERMES_GATEWAY_LOCK_DIR and XDG_STATE_HOME unstripped. Each
// want is str(Path(...)) in Python 3.11.7 of the value Hermes'
// _get_process_hermes_home and _get_lock_dir take.
func TestEnvPathsReadAsPython(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	home := filepath.FromSlash("/home/ann")
	for _, tt := range []struct {
		name          string
		env           map[string]string
		hermes, locks string
	}{
		{"HERMES_HOME stripped of \\x1c-\\x1f", map[string]string{"HERMES_HOME": "\x1c/srv/h\x1f", "HERMES_GATEWAY_LOCK_DIR": "/srv/l"},
			"/srv/h", "/srv/l"},
		{"HERMES_HOME of Unicode spaces", map[string]string{"HERMES_HOME": "\u3000/srv/h\u0085", "HERMES_GATEWAY_LOCK_DIR": "/srv/l"},
			"/srv/h", "/srv/l"},
		{"lock dir not stripped", map[string]string{"HERMES_HOME": "/srv/h", "HERMES_GATEWAY_LOCK_DIR": " /srv/l"},
			"/srv/h", " /srv/l"},
		{"blank lock dir taken", map[string]string{"HERMES_HOME": "/srv/h", "HERMES_GATEWAY_LOCK_DIR": "  ", "XDG_STATE_HOME": "/xdg"},
			"/srv/h", "  "},
		{"XDG_STATE_HOME not stripped", map[string]string{"HERMES_HOME": "/srv/h", "XDG_STATE_HOME": "  ", "HOME": home, "USERPROFILE": home},
			"/srv/h", filepath.Join("  ", "hermes", "gateway-locks")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if h, err := DefaultHermesHome(env(tt.env)); err != nil || h != tt.hermes {
				t.Errorf("home %q (%v), want %q", h, err, tt.hermes)
			}
			if l, err := DefaultLockDir(env(tt.env)); err != nil || l != tt.locks {
				t.Errorf("lock dir %q (%v), want %q", l, err, tt.locks)
			}
		})
	}
}
