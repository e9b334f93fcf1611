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

// TestMkdirForRacedByTheUser: the directory MkdirFor makes is in one of
// the user's, so between root's mkdir and its chown the user may remove
// it and put something else in its place. A hard link to a file of
// root's (macOS lets a user link any file they can reach; Linux only with
// fs.protected_hardlinks off) was given to the user by the chown, which
// changes the owner of the file the link names: /etc/sudoers, say. A
// symbolic link, or a directory of root's moved in from elsewhere in the
// user's tree, must not become the user's either. Whatever the swap,
// nothing of root's changes owner and MkdirFor fails.
func TestMkdirForRacedByTheUser(t *testing.T) {
	asroot.Require(t, "acting for another user needs root")
	const user = nobody
	for _, tc := range []struct {
		name string
		// swap replaces the new directory path; victim is root's and
		// must stay so.
		swap func(t *testing.T, path, victim string)
		dir  bool // the victim is a directory
	}{
		{"a hard link to a file of root's", func(t *testing.T, path, victim string) {
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a symbolic link to a directory of root's", func(t *testing.T, path, victim string) {
			symlinkOf(t, victim, path)
		}, true},
		{"a directory of root's, holding root's files", func(t *testing.T, path, victim string) {
			if err := os.Rename(victim, path); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testdir.New(t)
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			logs := filepath.Join(base, "Logs")
			mkdirOf(t, logs, 0o755)
			victim := filepath.Join(logs, "roots")
			if tc.dir {
				if err := os.Mkdir(victim, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(victim, "daemon.log"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(victim, []byte("root ALL=(ALL) ALL\n"), 0o440); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(logs, "hermes-supervisor")
			var victimNow string // where the victim is once swapped in
			err := mkdirForThen(dir, user, func(path string) {
				// The user's move: the new directory is root's and
				// empty, in a directory of theirs.
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				tc.swap(t, path, victim)
				victimNow = victim
				if _, err := os.Lstat(victim); err != nil {
					victimNow = path // moved, not linked
				}
			})
			if victimNow == "" {
				t.Fatal("MkdirFor made no directory")
			}
			fi, serr := os.Stat(victimNow)
			if serr != nil {
				t.Fatal(serr)
			}
			if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
				t.Errorf("%s, root's, is now uid %d's", victimNow, uid)
			}
			if !errors.Is(err, ErrUnsafeDir) {
				t.Errorf("MkdirFor(%s): %v, want ErrUnsafeDir: what is there is no directory the user may have", dir, err)
			}
		})
	}
}
