package testdir

import "testing"

func hostile(t testing.TB, _ string) map[string]string {
	// Only POSIX tests lay them out: a call here is a test in the wrong file.
	t.Fatal("the hostile files are POSIX's (FIFOs, and symlinks any user may make): call Hostile from a unix test")
	return nil
}
