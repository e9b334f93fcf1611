package cgrouptest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var made atomic.Int64

func newCgroup(t testing.TB) (dir, path string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("needs root to create cgroups and mark them delegated (trusted.* xattrs)")
	}
	own, parent, err := ownDir()
	if err != nil {
		skip("no cgroup v2 hierarchy to make a test cgroup in: %v", err)
	}
	name := fmt.Sprintf("hsp-test-%d-%d", os.Getpid(), made.Add(1))
	dir, path = filepath.Join(parent, name), strings.TrimSuffix(own, "/")+"/"+name
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create a test cgroup under our own: %v", err)
	}
	t.Cleanup(func() {
		if err := remove(dir); err != nil {
			t.Errorf("test cgroup left behind: %v", err)
		}
	})
	return dir, path
}

// ownDir finds the test's own cgroup v2 path and its directory.
func ownDir() (path, dir string, err error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for line := range strings.SplitSeq(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "/..") {
		return "", "", fmt.Errorf("our cgroup v2 path is %q", path)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	for line := range strings.SplitSeq(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" || f[3] != "/" {
			continue
		}
		return path, filepath.Join(f[4], path), nil
	}
	return "", "", errors.New("no cgroup2 mount of the whole hierarchy")
}

func sub(t testing.TB, dir, name string, xattrs ...string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(xattrs); i += 2 {
		if err := syscall.Setxattr(d, xattrs[i], []byte(xattrs[i+1]), 0); err != nil {
			t.Fatalf("setxattr %s on %s: %v", xattrs[i], d, err)
		}
	}
	return d
}

func remove(dir string) error {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	deadline := time.Now().Add(10 * time.Second)
	for i := len(dirs) - 1; i >= 0; i-- {
		for {
			err := os.Remove(dirs[i])
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rmdir %s: %w", dirs[i], err)
			}
			// Polling, with the deadline above: the kernel empties a killed
			// cgroup asynchronously, and this is test cleanup only.
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}
