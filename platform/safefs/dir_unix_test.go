//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDirSub makes a private directory once, opens it again after, and
// moves, links and lists files between it and its parent by name.
func TestDirSub(t *testing.T) {
	top, d, sub := subIn(t)
	if fi, err := os.Lstat(filepath.Join(top, "bin")); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("bin: %v %v; want a directory of mode 0700", fi, err)
	}
	again, err := d.Sub("bin")
	if err != nil {
		t.Fatalf("opening the bin a second time: %v", err)
	}
	again.Close()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(top, n), []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.MoveTo("a", sub, "a.1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(top, "bin", "a.1")); err != nil || string(b) != "a" {
		t.Fatalf("moved: %q %v", b, err)
	}
	if err := sub.LinkTo("a.1", d, "b"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("a link over b: %v; want os.ErrExist", err)
	}
	if err := sub.LinkTo("a.1", d, "a"); err != nil {
		t.Fatal(err)
	}
	names, err := sub.Names()
	if err != nil || !slices.Equal(names, []string{"a.1"}) {
		t.Fatalf("names %v %v", names, err)
	}
	// A second listing starts from the start again.
	if names, err := sub.Names(); err != nil || len(names) != 1 {
		t.Fatalf("names again %v %v", names, err)
	}
	if err := d.MoveTo("../x", sub, "x"); err == nil {
		t.Fatal("a path with a slash was taken as a name")
	}
}

// TestDirSubRefuses: no bin in a directory another user owns, and none
// that is a link or open to others.
func TestDirSubRefuses(t *testing.T) {
	tests := []struct {
		name string
		prep func(t *testing.T, top string)
	}{
		{"a link", func(t *testing.T, top string) {
			if err := os.Symlink(t.TempDir(), filepath.Join(top, "bin")); err != nil {
				t.Fatal(err)
			}
		}},
		{"group may enter", func(t *testing.T, top string) {
			if err := os.Mkdir(filepath.Join(top, "bin"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(top, "bin"), 0o750); err != nil {
				t.Fatal(err)
			}
		}},
		{"the parent is another user's", func(t *testing.T, top string) {
			if err := os.Chown(top, os.Geteuid()+1, os.Getegid()); err != nil {
				t.Fatalf("chown (the suite runs as root in CI): %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			tt.prep(t, top)
			d := openDirIn(t, top)
			if sub, err := d.Sub("bin"); !errors.Is(err, ErrUnsafeDir) {
				if sub != nil {
					sub.Close()
				}
				t.Fatalf("Sub: %v; want ErrUnsafeDir", err)
			}
		})
	}
}

// openDirIn opens top as a Dir, closed when t ends.
func openDirIn(t *testing.T, top string) *Dir {
	t.Helper()
	root, err := os.OpenRoot(top)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	d, err := OpenIn(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDirStillHas: a Dir kept open still counts as its name only while
// the name names it and it stays private to this user.
func TestDirStillHas(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, top string)
		want   bool
	}{
		{"unchanged", func(*testing.T, string) {}, true},
		{"opened to others", func(t *testing.T, top string) {
			if err := os.Chmod(filepath.Join(top, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"removed", func(t *testing.T, top string) {
			if err := os.Remove(filepath.Join(top, "bin")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by another directory", func(t *testing.T, top string) {
			if err := os.Rename(filepath.Join(top, "bin"), filepath.Join(top, "old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(top, "bin"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by a link to it", func(t *testing.T, top string) {
			if err := os.Rename(filepath.Join(top, "bin"), filepath.Join(top, "old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("old", filepath.Join(top, "bin")); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top, d, sub := subIn(t)
			tt.change(t, top)
			if got := d.StillHas("bin", sub); got != tt.want {
				t.Fatalf("StillHas = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDirEachBatch: every name comes once, in batches of at most n, and
// a second listing starts again from the top, not where the first ended.
func TestDirEachBatch(t *testing.T) {
	top := t.TempDir()
	want := map[string]bool{}
	for i := range 7 {
		n := fmt.Sprint("f", i)
		want[n] = true
		if err := os.WriteFile(filepath.Join(top, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := openDirIn(t, top)
	for pass := range 2 {
		got := map[string]bool{}
		err := d.EachBatch(3, func(des []os.DirEntry) {
			if len(des) > 3 {
				t.Errorf("pass %d: a batch of %d, want at most 3", pass, len(des))
			}
			for _, e := range des {
				if got[e.Name()] {
					t.Errorf("pass %d: %s listed twice", pass, e.Name())
				}
				got[e.Name()] = true
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("pass %d listed %v, want %v", pass, got, want)
		}
	}
}

// subIn opens a new temporary directory as a Dir, and Sub "bin" in it.
func subIn(t *testing.T) (top string, d, sub *Dir) {
	t.Helper()
	top = t.TempDir()
	d = openDirIn(t, top)
	sub, err := d.Sub("bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return top, d, sub
}

// TestDirListsTheDirectoryOpened: a Dir lists the directory it opened,
// with each entry's own type, even once another directory holding other
// names has taken its path: a link named like a file is a link, and a
// listing never reads the names of what now sits at the path.
func TestDirListsTheDirectoryOpened(t *testing.T) {
	parent := t.TempDir()
	top := filepath.Join(parent, "locks")
	if err := os.Mkdir(top, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "file.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(top, "link.lock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(top, "dir.lock"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := openDirIn(t, top)
	if err := os.Rename(top, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(top, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "planted.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]os.FileMode{}
	if err := d.EachBatch(10, func(des []os.DirEntry) {
		for _, e := range des {
			got[e.Name()] = e.Type()
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{"file.lock": 0, "link.lock": os.ModeSymlink, "dir.lock": os.ModeDir}
	if !maps.Equal(got, want) {
		t.Fatalf("listed %v, want %v: the directory opened, each entry with its own type", got, want)
	}
}

// TestReadBatchesPastAShortBatch: a batch shorter than n is not the end
// of a listing. Through an os.Root, os lstats each name as it lists it,
// and a name removed after getdents read it is dropped while still
// counted against n; what follows it must still be listed.
func TestReadBatchesPastAShortBatch(t *testing.T) {
	top := t.TempDir()
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(top, fmt.Sprint("f", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// getdents' order, which an unchanged directory keeps.
	plain, err := os.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	order, err := plain.Readdirnames(-1)
	plain.Close()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The first name is handed out; the rest wait read in os's buffer.
	first, err := f.ReadDir(1)
	if err != nil || len(first) != 1 || first[0].Name() != order[0] {
		t.Fatalf("first entry: %v %v, want %s", first, err, order[0])
	}
	gone := order[2] // in the next batch of 3: order[1], order[2], order[3]
	if err := os.Remove(filepath.Join(top, gone)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ReadBatches(f, 3, func(des []os.DirEntry) {
		for _, e := range des {
			got = append(got, e.Name())
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(order[1:2], order[3:])
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v: a short batch ended the listing", got, want)
	}
}
