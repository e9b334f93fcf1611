package lockstore

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPaths(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	home := filepath.FromSlash("/home/ann")
	tests := []struct {
		name          string
		env           map[string]string
		hermes, locks string
	}{
		{"explicit", map[string]string{"HERMES_HOME": "/srv/h", "HERMES_GATEWAY_LOCK_DIR": "/srv/l", "HOME": home, "USERPROFILE": home, "LOCALAPPDATA": home},
			"/srv/h", "/srv/l"},
		{"blank HERMES_HOME falls back", map[string]string{"HERMES_HOME": "  ", "HOME": home, "USERPROFILE": home, "XDG_STATE_HOME": "/xdg"},
			"", filepath.Join("/xdg", "hermes", "gateway-locks")},
		{"defaults", map[string]string{"HOME": home, "USERPROFILE": home},
			"", filepath.Join(home, ".local", "state", "hermes", "gateway-locks")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := DefaultHermesHome(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if tt.hermes != "" && h != tt.hermes {
				t.Errorf("home %s, want %s", h, tt.hermes)
			}
			if tt.hermes == "" && !strings.HasSuffix(strings.ToLower(h), "hermes") {
				t.Errorf("default home %s", h)
			}
			l, err := DefaultLockDir(env(tt.env))
			if err != nil || l != tt.locks {
				t.Errorf("lock dir %s (%v), want %s", l, err, tt.locks)
			}
		})
	}
	h, _ := DefaultHermesHome(env(map[string]string{"HOME": home, "USERPROFILE": home, "LOCALAPPDATA": home, "HERMES_DATA_DIR_SUFFIX": "-dev"}))
	if !strings.HasSuffix(h, "hermes-dev") {
		t.Errorf("suffix not appended: %s", h)
	}
}
