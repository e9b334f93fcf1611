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

// TestMkdirFor is root making the log directory of sudo install --system
// in the user's home (macOS): the directory is the user's, and wherever
// the user points the path, nothing is made or changed owner elsewhere.
func TestMkdirFor(t *testing.T) {
	asroot.Require(t, "acting for another user needs root")
	const user = nobody
	mine := func(t *testing.T, path string) { mkdirOf(t, path, 0o755) }
	for _, tc := range []struct {
		name string
		// lay makes the layout in base and returns the directory to make
		// and one a refusal must leave as it was (empty, root's).
		lay func(t *testing.T, base string) (dir, spared string)
		ok  bool
	}{
		{"new, in the user's directory", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "Logs"))
			return filepath.Join(base, "Logs", "hermes-supervisor"), ""
		}, true},
		{"already the user's", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "Logs"))
			mine(t, filepath.Join(base, "Logs", "hermes-supervisor"))
			return filepath.Join(base, "Logs", "hermes-supervisor"), ""
		}, true},
		{"already there, root's", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "Logs"))
			d := filepath.Join(base, "Logs", "hermes-supervisor")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d, d
		}, false},
		{"a link of the user's in its place, to root's directory", func(t *testing.T, base string) (string, string) {
			mine(t, filepath.Join(base, "Logs"))
			etc := filepath.Join(base, "etc")
			if err := os.Mkdir(etc, 0o755); err != nil {
				t.Fatal(err)
			}
			d := filepath.Join(base, "Logs", "hermes-supervisor")
			symlinkOf(t, etc, d)
			return d, etc
		}, false},
		{"under a link of the user's to root's directory", func(t *testing.T, base string) (string, string) {
			etc := filepath.Join(base, "etc")
			if err := os.Mkdir(etc, 0o755); err != nil {
				t.Fatal(err)
			}
			l := filepath.Join(base, "Logs")
			symlinkOf(t, etc, l)
			return filepath.Join(l, "hermes-supervisor"), etc
		}, false},
		{"in root's directory", func(t *testing.T, base string) (string, string) {
			d := filepath.Join(base, "Logs")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(d, "hermes-supervisor"), d
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testdir.New(t)
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			dir, spared := tc.lay(t, base)
			err := MkdirFor(dir, user)
			if !tc.ok {
				if !errors.Is(err, ErrUnsafeDir) {
					t.Errorf("MkdirFor(%s): %v, want ErrUnsafeDir", dir, err)
				}
				fi, serr := os.Stat(spared)
				if serr != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
					t.Errorf("a refusal changed %s: %v %v", spared, fi, serr)
				}
				if names, _ := os.ReadDir(spared); len(names) != 0 {
					t.Errorf("a refusal made %v in %s", names, spared)
				}
				return
			}
			if err != nil {
				t.Fatalf("MkdirFor(%s): %v", dir, err)
			}
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || st.Uid != user {
				t.Errorf("%s is %v uid %d, want a directory of uid %d", dir, fi.Mode(), st.Uid, user)
			}
			// Now the user's program can make its log there.
			f := filepath.Join(dir, "hermes-supervisor.log")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		})
	}
}
