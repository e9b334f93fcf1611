package fullpipe

import (
	"os"
	"testing"
)

// full is for unix tests only: a Windows pipe's buffer is not filled here.
func full(t testing.TB) (r, w *os.File) {
	t.Helper()
	t.Fatal("fullpipe: no full pipe on Windows; the tests that use one are unix-only")
	return nil, nil
}
