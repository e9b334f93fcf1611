//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestRunRefusesUnsafeLogFile plants, at the --log-file path, what any
// process that can write the log directory (the user's own, the gateway)
// can put there: a FIFO, which hung the supervisor in its open before it
// started anything, a link, whose target it appended to, a directory. Each
// is refused before anything is created, in one line naming the path,
// with exit 78: no restart can fix it, only removing it.
func TestRunRefusesUnsafeLogFile(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path, victim string)
	}{
		{"fifo", func(t *testing.T, path, _ string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to a file", func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"dangling link", func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim+".new", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", func(t *testing.T, path, _ string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	exe := testdir.OpenCopy(t, "hermes-supervisor")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			logFile := filepath.Join(dir, "logs", "sup.log")
			if err := os.Mkdir(filepath.Dir(logFile), 0o700); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, logFile, victim)
			home := filepath.Join(dir, "home")
			code, stderr := runCLI(t, exe, "--home", home, "--lock-dir", filepath.Join(dir, "locks"), "run", "--demo", "--log-file", logFile)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stderr %q", code, exitConfig, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "hermes-supervisor: --log-file "+logFile+": ") ||
				!strings.Contains(lines[0], "not a regular file") {
				t.Errorf("stderr %q, want one line naming %s as not a regular file", stderr, logFile)
			}
			if _, err := os.Lstat(home); err == nil {
				t.Errorf("the home was created before the refusal")
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
				t.Errorf("the link's target was written: %q", b)
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Errorf("the dangling link's target was created")
			}
		})
	}
}
