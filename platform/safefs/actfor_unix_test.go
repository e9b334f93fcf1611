//go:build unix

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/asroot"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// nobody is the user root acts for in these tests.
const nobody = 65534

// giveTo makes path, a file, directory or link, nobody's, with mode (past
// the umask) unless it is a link.
func giveTo(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// mkdirOf makes the directory path, nobody's, with mode.
func mkdirOf(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	giveTo(t, path, mode)
}

// symlinkOf makes path a link of nobody's to target.
func symlinkOf(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	giveTo(t, path, 0)
}

// TestWriteFileFor is root writing a file into the home of another user
// (sudo install --system --migrate): wherever the user points their home,
// by a link they own or a directory they share, the file lands only in a
// directory of theirs, owned by them, and nothing is written elsewhere.
func TestWriteFileFor(t *testing.T) {
	asroot.Require(t, "acting for another user needs root")
	const user = nobody
	if ActsFor(0) || !ActsFor(user) {
		t.Fatalf("ActsFor(0) = %v, ActsFor(%d) = %v: root acts for others only", ActsFor(0), user, ActsFor(user))
	}
	mine, link := mkdirOf, symlinkOf
	for _, tc := range []struct {
		name string
		// lay makes the layout in base and returns the directory to
		// write in and the one a refused write must leave empty.
		lay func(t *testing.T, base string) (dir, spared string)
		ok  bool
	}{
		{"the user's own directory", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "home"), 0o755)
			return filepath.Join(base, "home"), ""
		}, true},
		{"through a link of the user's to their directory", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "real"), 0o700)
			link(t, filepath.Join(base, "real"), filepath.Join(base, "home"))
			return filepath.Join(base, "home"), ""
		}, true},
		{"a link of the user's to root's directory", func(t *testing.T, base string) (string, string) {
			etc := filepath.Join(base, "etc")
			if err := os.Mkdir(etc, 0o755); err != nil {
				t.Fatal(err)
			}
			link(t, etc, filepath.Join(base, "home"))
			return filepath.Join(base, "home"), etc
		}, false},
		{"a link of the user's on the way to root's directory", func(t *testing.T, base string) (string, string) {
			etc := filepath.Join(base, "sys", "etc")
			if err := os.MkdirAll(etc, 0o755); err != nil {
				t.Fatal(err)
			}
			link(t, filepath.Join(base, "sys"), filepath.Join(base, "u"))
			return filepath.Join(base, "u", "etc"), etc
		}, false},
		{"the user's directory that a group may write", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "home"), 0o775)
			return filepath.Join(base, "home"), filepath.Join(base, "home")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testdir.New(t)
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			dir, spared := tc.lay(t, base)
			err := WriteFileFor(dir, "marker.json", []byte(`{"a":1}`), 0o644, user)
			if !tc.ok {
				if !errors.Is(err, ErrUnsafeDir) {
					t.Errorf("WriteFileFor(%s): %v, want ErrUnsafeDir", dir, err)
				}
				if names, _ := os.ReadDir(spared); len(names) != 0 {
					t.Errorf("a refused write left %v in %s", names, spared)
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteFileFor(%s): %v", dir, err)
			}
			path := filepath.Join(dir, "marker.json")
			b, err := os.ReadFile(path)
			if err != nil || string(b) != `{"a":1}` {
				t.Fatalf("%s holds %q (%v)", path, b, err)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != user || fi.Mode().Perm() != 0o644 {
				t.Errorf("%s is uid %d mode %v, want uid %d mode 0644", path, st.Uid, fi.Mode().Perm(), user)
			}
			if names, _ := os.ReadDir(dir); len(names) != 1 {
				t.Errorf("%s holds %v, want the marker alone (no temp left)", dir, names)
			}
		})
	}
	t.Run("a link at the file's name is replaced, not followed", func(t *testing.T) {
		base := testdir.New(t)
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(base, "home")
		mine(t, home, 0o755)
		victim := filepath.Join(base, "victim")
		if err := os.WriteFile(victim, []byte("root's"), 0o644); err != nil {
			t.Fatal(err)
		}
		link(t, victim, filepath.Join(home, "marker.json"))
		if err := WriteFileFor(home, "marker.json", []byte("{}"), 0o644, user); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "root's" {
			t.Errorf("the link's target was written: %q", b)
		}
		if fi, err := os.Lstat(filepath.Join(home, "marker.json")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("the marker is %v (%v), want a regular file in place of the link", fi, err)
		}
	})
}
