// Package testdir gives tests temporary directories that are removed file
// by file, deepest first. Under Wine 8, os.RemoveAll (and so the cleanup of
// t.TempDir) fails on every directory, and the Windows tests run there.
package testdir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// New returns a new empty directory, removed when t ends.
func New(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hermes-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Remove(dir) })
	return dir
}

// Remove deletes dir and everything in it, children before parents,
// leaving behind only what cannot be removed.
func Remove(dir string) {
	var paths []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		paths = append(paths, p)
		return nil
	})
	for _, p := range slices.Backward(paths) {
		_ = os.Chmod(p, 0o700)
		_ = os.Remove(p)
	}
}
