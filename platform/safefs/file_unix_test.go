//go:build unix

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadRegularFileRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 2 GiB that cost nothing on disk and must cost nothing in RAM.
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mk := func(name string, make func(string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		path string
		want error
	}{
		{"symlink", mk("link", func(p string) error { return os.Symlink(secret, p) }), ErrNotRegular},
		{"symlink to /dev/zero", mk("zero", func(p string) error { return os.Symlink("/dev/zero", p) }), ErrNotRegular},
		{"fifo", mk("fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }), ErrNotRegular},
		{"device", "/dev/null", ErrNotRegular},
		{"directory", dir, ErrNotRegular},
		{"huge sparse file", big, ErrTooBig},
		{"missing", filepath.Join(dir, "none"), os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadRegularFile(c.path, 1<<20); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Fatalf("got %v, want %v", err, c.want)
				}
				if !strings.Contains(err.Error(), c.path) {
					t.Fatalf("error does not name the file: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadRegularFile blocked")
			}
		})
	}
	b, err := ReadRegularFile(secret, 9)
	if err != nil || string(b) != "root only" {
		t.Fatalf("regular file at the limit: %q, %v", b, err)
	}
	if _, err := ReadRegularFile(secret, 8); !errors.Is(err, ErrTooBig) {
		t.Fatalf("one byte over the limit: %v", err)
	}
}

func TestOpenLockFileNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hermes-supervisor.lock")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenLockFile(link, true); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("symlink: %v", err)
	}
	fifo := filepath.Join(dir, "gateway.lock")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLockFile(fifo, true); err == nil {
		t.Fatal("a FIFO was opened as a lock file")
	}
	if b, _ := os.ReadFile(secret); string(b) != "root only" {
		t.Fatalf("the link's target changed: %q", b)
	}
	f, err := OpenLockFile(filepath.Join(dir, "new.lock"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := LockFile(f); err != nil {
		t.Fatal(err)
	}
}

func TestReadRegularRefusesLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gateway.pid")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRegular(link, 10); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("symlink: %v", err)
	}
	fifo := filepath.Join(dir, "x.lock")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO with no writer would block a plain open forever.
	done := make(chan error, 1)
	go func() { _, _, err := ReadRegular(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("fifo: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadRegular blocked on a FIFO")
	}
}

// The owner in a stamp is the uid that created the file: the writer rule
// of lockstore rests on it.
func TestStampOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, st, err := ReadRegular(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if o := st.Owner(); o == nil || int(*o) != os.Geteuid() {
		t.Fatalf("owner %v, want %d", o, os.Geteuid())
	}
}
