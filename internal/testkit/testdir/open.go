package testdir

import (
	"os"
	"testing"
)

// Open returns a new empty directory every user may enter, removed when t
// ends: t.TempDir's parent is private to the test's user, and a test that
// runs a helper as another user needs a place that user can reach.
func Open(t testing.TB) string {
	t.Helper()
	dir := New(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// OpenCopy returns a copy of the running test binary, named name, in a
// directory every user may enter (go test's build dir is private).
func OpenCopy(t testing.TB, name string) string {
	t.Helper()
	exe, err := CopySelf(Open(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// CopySelf copies the running test binary into dir as name, executable by
// every user. cp writes the copy, not this process: a write descriptor of
// ours would leak into every child that parallel tests fork meanwhile, and
// exec of the copy would fail with "text file busy" until each of them had
// exec'd (golang/go#22315). It is POSIX's: on Windows it returns an error
// wrapping errors.ErrUnsupported.
func CopySelf(dir, name string) (string, error) { return copySelf(dir, name) }
