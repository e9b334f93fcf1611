package testdir

import "testing"

func hostile(t testing.TB, _ string) map[string]string {
	t.Skip("the hostile files are POSIX's: FIFOs, and symlinks any user may make")
	return nil
}
