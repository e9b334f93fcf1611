//go:build unix

package testdir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Hostile makes, in dir, every kind of file a user who can write the home
// may leave where we read, keyed by a description: each must be refused
// at once, never followed, waited on or read into memory.
func Hostile(t testing.TB, dir string) map[string]string {
	t.Helper()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(`{"state":"running"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	mk := func(name string, f func(p string) error) {
		p := filepath.Join(dir, name)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	mk("fifo", func(p string) error { return unix.Mkfifo(p, 0o644) })
	mk("link to dev zero", func(p string) error { return os.Symlink("/dev/zero", p) })
	mk("symlink to a file", func(p string) error { return os.Symlink(secret, p) })
	mk("huge sparse file", func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(2 << 30)
	})
	mk("directory", func(p string) error { return os.Mkdir(p, 0o700) })
	return files
}

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
