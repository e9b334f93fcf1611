//go:build unix

package testdir

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func hostile(t testing.TB, dir string) map[string]string {
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
