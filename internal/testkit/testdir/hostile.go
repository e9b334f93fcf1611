package testdir

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// Hostile makes, in dir, every kind of file a user who can write the home
// may leave where we read, keyed by a description: each must be refused
// at once, never followed, waited on or read into memory. Where the OS
// lacks them (Windows: FIFOs, symlinks a user may make) it skips t.
func Hostile(t testing.TB, dir string) map[string]string { return hostile(t, dir) }

// Within runs f and returns its error, failing t when f blocks (a reader
// that opened a FIFO waits for a writer that never comes).
func Within(t testing.TB, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hung", what)
		return nil
	}
}

// Refused runs read over every Hostile file, one subtest each, and fails
// the subtest when read blocks or its error is none of refusals.
func Refused(t *testing.T, what string, read func(path string) error, refusals ...error) {
	for name, path := range Hostile(t, t.TempDir()) {
		t.Run(name, func(t *testing.T) {
			err := Within(t, what, func() error { return read(path) })
			if !slices.ContainsFunc(refusals, func(r error) bool { return errors.Is(err, r) }) {
				t.Errorf("%s: %v", what, err)
			}
		})
	}
}
