//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestRunRefusesForeignPathWith78 replays issue 23 items 5 and 7 at the
// CLI: a home or lock dir path another user can shape is refused before
// anything starts, in one line, with exit 78 (EX_CONFIG), which the units
// install writes never restart; a root sweep through it is refused too,
// and removes nothing behind it.
func TestRunRefusesForeignPathWith78(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a file another user's needs root; CI runs as root")
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, target string) (home, lockDir string)
		want  string
	}{
		{"home: another user's link", func(t *testing.T, dir, target string) (string, string) {
			link := filepath.Join(dir, "home")
			plantLink(t, target, link, nobodyUID)
			return link, filepath.Join(dir, "locks")
		}, "is a link owned by uid 65534"},
		{"home: own link in a shared non-sticky dir", func(t *testing.T, dir, target string) (string, string) {
			shared := filepath.Join(dir, "shared")
			mkdirChmod(t, shared, 0o777)
			plantLink(t, target, filepath.Join(shared, "home"), -1)
			return filepath.Join(shared, "home"), filepath.Join(dir, "locks")
		}, "has mode 0777 and no sticky bit"},
		{"lock dir: another user's link", func(t *testing.T, dir, target string) (string, string) {
			link := filepath.Join(dir, "locks")
			plantLink(t, target, link, nobodyUID)
			return filepath.Join(dir, "home"), link
		}, "is a link owned by uid 65534"},
		{"lock dir: inside another user's directory", func(t *testing.T, dir, target string) (string, string) {
			theirs := filepath.Join(dir, "theirs")
			mkdirChmod(t, theirs, 0o755)
			if err := os.Chown(theirs, nobodyUID, nobodyUID); err != nil {
				t.Fatal(err)
			}
			plantLink(t, target, filepath.Join(theirs, "locks"), -1)
			return filepath.Join(dir, "home"), filepath.Join(theirs, "locks")
		}, "is a directory owned by uid 65534"},
	}
	exe := testdir.OpenCopy(t, "hermes-supervisor")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testdir.New(t)
			target := filepath.Join(testdir.New(t), "target")
			mkdirChmod(t, target, 0o700)
			// Files a sweep removes, as a home's and as a lock dir's:
			// leftovers of interrupted writes, an hour old.
			old := time.Now().Add(-time.Hour)
			victims := []string{filepath.Join(target, ".gateway_state.json.123.tmp"), filepath.Join(target, "bot-0123456789abcdef.lock.stale")}
			for _, v := range victims {
				if err := os.WriteFile(v, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(v, old, old); err != nil {
					t.Fatal(err)
				}
			}
			home, lockDir := tt.plant(t, dir, target)
			for _, cmd := range [][]string{{"run", "--demo"}, {"sweep"}} {
				code, stderr := runCLI(t, exe, append([]string{"--home", home, "--lock-dir", lockDir}, cmd...)...)
				if code != exitConfig {
					t.Errorf("%s: exit %d, want %d; stderr %q", cmd[0], code, exitConfig, stderr)
				}
				var errLines []string
				for _, l := range strings.Split(stderr, "\n") {
					if strings.HasPrefix(l, "hermes-supervisor: ") {
						errLines = append(errLines, l)
					}
				}
				if len(errLines) != 1 || !strings.Contains(errLines[0], tt.want) {
					t.Errorf("%s: stderr %q, want one error line saying %q", cmd[0], stderr, tt.want)
				}
			}
			for _, v := range victims {
				if _, err := os.Lstat(v); err != nil {
					t.Errorf("a file behind the planted path is gone: %v", err)
				}
			}
			des, _ := os.ReadDir(target)
			if len(des) != len(victims) {
				t.Errorf("the target changed: %v", des)
			}
		})
	}
}

// runCLI runs the CLI (a copy of this test binary) and returns its exit
// status and stderr. It runs in a process of its own: should the refusal
// regress, the supervisor would run, and a SIGTERM after 30 s, which only
// a regression waits for, ends it and its gateway.
func runCLI(t *testing.T, exe string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("%v ran until stopped: it was not refused", args)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func plantLink(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Lchown(link, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdirChmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
