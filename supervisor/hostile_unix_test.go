//go:build unix

package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// hostileFiles makes, in dir, every kind of file a user who can write the
// home may leave where we read: each must be refused at once, never
// followed, waited on or read into memory.
func hostileFiles(t *testing.T, dir string) map[string]string {
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

func within(t *testing.T, what string, f func() error) error {
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

func TestHostileReadsAreRefused(t *testing.T) {
	for name, path := range hostileFiles(t, t.TempDir()) {
		t.Run(name, func(t *testing.T) {
			err := within(t, "ReadStatusFile", func() error { _, err := ReadStatusFile(path); return err })
			if !errors.Is(err, safefs.ErrNotRegular) && !errors.Is(err, safefs.ErrTooBig) {
				t.Errorf("ReadStatusFile: %v", err)
			}
			err = within(t, "ReadFileConfig", func() error { _, err := ReadFileConfig(path); return err })
			if !errors.Is(err, safefs.ErrNotRegular) && !errors.Is(err, safefs.ErrTooBig) {
				t.Errorf("ReadFileConfig: %v", err)
			}
		})
	}
}
