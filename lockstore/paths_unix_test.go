//go:build unix

package lockstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
)

// TestDefaultPathsWithoutHOME is `env -i hermes-supervisor status`: with
// no HOME, Hermes' Python (Path.home(), os.path.expanduser) takes the home
// of the process's uid from the user database, and so do we; the home and
// lock dir were refused ("$HOME is not defined") before.
func TestDefaultPathsWithoutHOME(t *testing.T) {
	// The process's own HOME too, which os.UserHomeDir would read.
	t.Setenv("HOME", "")
	if err := os.Unsetenv("HOME"); err != nil {
		t.Fatal(err)
	}
	u, err := passwd.Current(context.Background())
	if err != nil || u.HomeDir == "" {
		t.Fatalf("this test's own uid has no home in the user database: %v", err)
	}
	for _, env := range []map[string]string{{}, {"HOME": ""}} {
		h, err := DefaultHermesHome(func(k string) string { return env[k] })
		if want := filepath.Join(u.HomeDir, ".hermes"); err != nil || h != want {
			t.Errorf("DefaultHermesHome with %v = %q, %v; want %q", env, h, err, want)
		}
		d, err := DefaultLockDir(func(k string) string { return env[k] })
		if want := filepath.Join(u.HomeDir, ".local", "state", "hermes", "gateway-locks"); err != nil || d != want {
			t.Errorf("DefaultLockDir with %v = %q, %v; want %q", env, d, err, want)
		}
	}
}
