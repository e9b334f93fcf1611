// Package fullpipe makes a pipe whose buffer is full, for tests of what
// must not wait on a log nobody reads.
package fullpipe

import (
	"os"
	"testing"
)

// New returns a pipe whose buffer is full to the last byte, whatever its
// size: the next write to w blocks until r is read. Both ends are closed
// when the test ends.
func New(t testing.TB) (r, w *os.File) {
	t.Helper()
	return full(t)
}
