// Package asroot gates tests that need root: they skip, saying why, in the
// fast loop a user runs (make quick), and fail under CI, which runs as
// root, so that a skip there can never hide a failure.
package asroot

import (
	"os"
	"testing"
)

// Require stops t unless this process is root: t skips, naming why it
// needs root, or fails when CI is set in the environment.
func Require(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s, and CI runs as root: run the suite as root", why)
	}
	t.Skipf("%s; CI runs as root", why)
}
