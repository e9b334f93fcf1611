//go:build unix

package safefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

func TestRootStampRefusesSymlink(t *testing.T) {
	dir := testdir.New(t)
	outside := testdir.New(t)
	target := filepath.Join(outside, "x.lock")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "x.lock")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := safefs.RootStamp(root, "x.lock"); !errors.Is(err, safefs.ErrNotRegular) {
		t.Errorf("RootStamp of a symlink: %v, want ErrNotRegular", err)
	}
	if _, _, err := safefs.ReadRoot(root, "x.lock", 100); err == nil {
		t.Error("ReadRoot followed a symlink out of its root")
	}
}

// TestOpenDir judges each path a home or lock dir may be given: links and
// directories of ours or root's are followed, anything another user could
// change along the way is refused.
func TestOpenDir(t *testing.T) {
	const nobody = 65534
	type setup func(t *testing.T, dir string) (path, want string)
	tests := []struct {
		name     string
		root     bool // needs root to make a file another user's
		create   bool
		setup    setup
		wantErr  error
		wantMode os.FileMode // of the directory opened, when non-zero
	}{
		{name: "own directory", setup: func(t *testing.T, dir string) (string, string) {
			return mkdirMode(t, dir, "h", 0o700), filepath.Join(dir, "h")
		}},
		{name: "own link, relative with ..", setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, mkdirMode(t, dir, "a", 0o755), "real", 0o700)
			mkdirMode(t, dir, "b", 0o755)
			link := filepath.Join(dir, "b", "h")
			mustSymlink(t, "../a/real", link)
			return link, real
		}},
		{name: "own link to own link", setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, dir, "real", 0o700)
			mustSymlink(t, real, filepath.Join(dir, "l1"))
			mustSymlink(t, filepath.Join(dir, "l1"), filepath.Join(dir, "l2"))
			return filepath.Join(dir, "l2", "."), real
		}},
		{name: "missing, created", create: true, wantMode: 0o700, setup: func(t *testing.T, dir string) (string, string) {
			return filepath.Join(dir, "x", "y"), filepath.Join(dir, "x", "y")
		}},
		{name: "missing, not created", wantErr: os.ErrNotExist, setup: func(t *testing.T, dir string) (string, string) {
			return filepath.Join(dir, "x"), ""
		}},
		{name: "a file", wantErr: syscall.ENOTDIR, setup: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p, ""
		}},
		{name: "link loop", wantErr: syscall.ELOOP, setup: func(t *testing.T, dir string) (string, string) {
			mustSymlink(t, "l2", filepath.Join(dir, "l1"))
			mustSymlink(t, "l1", filepath.Join(dir, "l2"))
			return filepath.Join(dir, "l1"), ""
		}},
		{name: "world-writable itself", wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			return mkdirMode(t, dir, "h", 0o777), ""
		}},
		{name: "world-writable sticky itself", wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			return mkdirMode(t, dir, "h", os.ModeSticky|0o777), ""
		}},
		{name: "parent world-writable, not sticky", wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			return mkdirMode(t, mkdirMode(t, dir, "shared", 0o777), "h", 0o700), ""
		}},
		{name: "parent world-writable and sticky, child ours", setup: func(t *testing.T, dir string) (string, string) {
			p := mkdirMode(t, mkdirMode(t, dir, "tmp", os.ModeSticky|0o777), "h", 0o700)
			return p, p
		}},
		{name: "own link in a non-sticky shared dir", wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, dir, "real", 0o700)
			link := filepath.Join(mkdirMode(t, dir, "shared", 0o777), "h")
			mustSymlink(t, real, link)
			return link, ""
		}},
		{name: "own link to a dir inside a shared dir", wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, mkdirMode(t, dir, "shared", 0o777), "real", 0o700)
			mustSymlink(t, real, filepath.Join(dir, "h"))
			return filepath.Join(dir, "h"), ""
		}},
		{name: "another user's link", root: true, wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, dir, "real", 0o700)
			mustSymlink(t, real, filepath.Join(dir, "h"))
			mustLchown(t, filepath.Join(dir, "h"), nobody)
			return filepath.Join(dir, "h"), ""
		}},
		{name: "another user's link in a sticky dir", root: true, wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			real := mkdirMode(t, dir, "real", 0o700)
			link := filepath.Join(mkdirMode(t, dir, "tmp", os.ModeSticky|0o777), "h")
			mustSymlink(t, real, link)
			mustLchown(t, link, nobody)
			return link, ""
		}},
		{name: "another user's directory", root: true, wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			p := mkdirMode(t, dir, "h", 0o700)
			mustLchown(t, p, nobody)
			return p, ""
		}},
		{name: "another user's directory on the way", root: true, wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			theirs := mkdirMode(t, dir, "theirs", 0o755)
			mustLchown(t, theirs, nobody)
			return mkdirMode(t, theirs, "h", 0o700), ""
		}},
		{name: "group-writable parent, another group", root: true, wantErr: safefs.ErrUnsafeDir, setup: func(t *testing.T, dir string) (string, string) {
			g := mkdirMode(t, dir, "g", 0o775)
			if err := os.Chown(g, 0, nobody); err != nil {
				t.Fatal(err)
			}
			return mkdirMode(t, g, "h", 0o700), ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root; CI runs as root")
			}
			path, want := tt.setup(t, testdir.New(t))
			r, got, err := safefs.OpenDir(path, tt.create)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("OpenDir(%s) = %q, %v; want an error wrapping %v", path, got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got != want {
				t.Errorf("resolved to %s, want %s", got, want)
			}
			// The root is the directory judged: a file made through it
			// is there.
			if err := r.WriteFile("probe", nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(want, "probe")); err != nil {
				t.Errorf("a file made through the root is not in %s: %v", want, err)
			}
			if tt.wantMode != 0 {
				fi, err := os.Lstat(want)
				if err != nil || fi.Mode().Perm() != tt.wantMode {
					t.Errorf("created %s with mode %v, %v; want %v", want, fi.Mode().Perm(), err, tt.wantMode)
				}
			}
		})
	}
}

func mkdirMode(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	// Chmod, not Mkdir's mode: the umask would drop the bits under test
	// and Mkdir ignores the sticky bit.
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustLchown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}
