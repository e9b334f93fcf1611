//go:build unix

package service

// Attack tests for issue 23, item 3: as root under sudo (install --system,
// stop, uninstall) the user's ~/.config/systemd/user/*.service were read
// unbounded and through links: a symlink to /dev/zero grew the root process
// to 1.5 GB, a FIFO hung it, and a symlink to a root-only file was read
// with root's rights. A user's unit dir is read as every other file of
// theirs: no link followed, regular files only, bounded.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// hostileUnits plants name in dir as each hostile kind of file, each
// holding (or pointing at) a unit that claims home, and returns the kinds.
func hostileUnits(t *testing.T, dir, name, home string) map[string]func() {
	t.Helper()
	unit := "[Service]\nExecStart=/usr/bin/hermes gateway run\nEnvironment=HERMES_HOME=" + home + "\n"
	path := filepath.Join(dir, name)
	secret := filepath.Join(testdir.New(t), "root-only")
	if err := os.MkdirAll(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(secret, "unit")
	if err := os.WriteFile(target, []byte(unit), 0o600); err != nil {
		t.Fatal(err)
	}
	reset := func() {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return map[string]func(){
		"symlink to zero device": func() { reset(); must(t, os.Symlink("/dev/zero", path)) },
		"FIFO":                   func() { reset(); must(t, syscall.Mkfifo(path, 0o644)) },
		"symlink to a root-only file": func() {
			reset()
			must(t, os.Symlink(target, path))
		},
		"huge file": func() {
			reset()
			// A unit that serves home, padded past the bound with a comment.
			must(t, os.WriteFile(path, []byte(unit+"#"+strings.Repeat("x", maxDefinition)+"\n"), 0o644))
		},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bounded fails the test when f does not return: a hang is the attack.
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hung on the planted file", what)
	}
}

func TestUserUnitDirIsReadSafely(t *testing.T) {
	userHome := testdir.New(t)
	unitDir := filepath.Join(userHome, ".config", "systemd", "user")
	must(t, os.MkdirAll(unitDir, 0o755))
	home := filepath.Join(userHome, ".hermes")
	c := Config{Exe: "/usr/bin/hermes-supervisor", Home: home, StopTimeout: time.Minute, UserHome: userHome, UID: 1000, User: "ann", System: true}
	// Only the planted dir is searched: the host's /etc is not the test's.
	glob := func(p string) ([]string, error) {
		if !strings.HasPrefix(p, userHome) {
			return nil, nil
		}
		return filepath.Glob(p)
	}
	s := Systemd{Glob: glob}
	for kind, plant := range hostileUnits(t, unitDir, Name+".service", home) {
		t.Run("ours/"+kind, func(t *testing.T) {
			plant()
			var defs []Definition
			bounded(t, "Installed", func() { defs = s.Installed(c) })
			for _, d := range defs {
				if !d.System {
					t.Errorf("the planted %s was read as the user's unit: %+v", kind, d)
				}
			}
		})
	}
	for kind, plant := range hostileUnits(t, unitDir, "hermes-gateway.service", home) {
		t.Run("Hermes'/"+kind, func(t *testing.T) {
			plant()
			var p Plan
			var err error
			bounded(t, "Install", func() { p, err = s.Install(c, true) })
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range p.Steps {
				if st.Run != nil && strings.Contains(strings.Join(st.Run, " "), "hermes-gateway.service") {
					t.Errorf("the planted %s was read as Hermes' unit of this home: %q", kind, st.Run)
				}
			}
		})
	}
}
