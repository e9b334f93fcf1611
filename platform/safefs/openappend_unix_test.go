//go:build unix

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenAppendRefusesWhatIsNoRegularFile plants at a log path what any
// process that can write its directory can: OpenAppend must refuse each
// at once with ErrNotRegular (a FIFO used to block the open until a reader
// came, a link to redirect the writes), and append to a regular file or
// create a missing one 0600.
func TestOpenAppendRefusesWhatIsNoRegularFile(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path, victim string)
		ok    bool
	}{
		{"fifo", func(t *testing.T, path, _ string) { must(t, syscall.Mkfifo(path, 0o600)) }, false},
		{"fifo with a reader", func(t *testing.T, path, _ string) {
			must(t, syscall.Mkfifo(path, 0o600))
			fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
			must(t, err)
			t.Cleanup(func() { syscall.Close(fd) })
		}, false},
		{"link to a file", func(t *testing.T, path, victim string) { must(t, os.Symlink(victim, path)) }, false},
		{"dangling link", func(t *testing.T, path, victim string) { must(t, os.Symlink(victim+".new", path)) }, false},
		{"directory", func(t *testing.T, path, _ string) { must(t, os.Mkdir(path, 0o700)) }, false},
		{"regular file", func(t *testing.T, path, _ string) { must(t, os.WriteFile(path, []byte("old\n"), 0o600)) }, true},
		{"missing", func(t *testing.T, path, _ string) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			must(t, os.WriteFile(victim, []byte("keep\n"), 0o600))
			path := filepath.Join(dir, "sup.log")
			tt.plant(t, path, victim)
			f, err := OpenAppend(path)
			if !tt.ok {
				if !errors.Is(err, ErrNotRegular) {
					t.Fatalf("OpenAppend = %v, want ErrNotRegular", err)
				}
				if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
					t.Fatalf("the link's target changed: %q", b)
				}
				if _, err := os.Lstat(victim + ".new"); err == nil {
					t.Fatal("the dangling link's target was created")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			_, err = f.WriteString("new\n")
			f.Close()
			must(t, err)
			if b, _ := os.ReadFile(path); string(b) != string(before)+"new\n" {
				t.Fatalf("content %q, want %q appended to %q", b, "new\n", before)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
				t.Fatalf("mode %v, %v: want no access for others", fi.Mode(), err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
