//go:build unix

package lockstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestLockProbesOpenOnlyTheFileItself plants what a user who can write the
// home or lock dir could put where gateway.lock or host-gateway.lock
// stands: a symlink to a file another process holds locked, and a FIFO.
// The probe (RuntimeLockHeld, and fileLocked for host-gateway.lock) opens
// neither: through the link it would answer for another file's lock (a
// home held by nobody would read as held), and a link to a device would
// have the supervisor, as root, open it; a FIFO is no lock file. Each is
// refused as not a regular file.
func TestLockProbesOpenOnlyTheFileItself(t *testing.T) {
	s, l := newStore(t)
	target := filepath.Join(t.TempDir(), "someone-elses.lock")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	startProc(t, "lock", false, "LOCKSTORE_LOCK="+target)
	plants := []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"a symlink to a held lock", func(t *testing.T, path string) {
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, path string) {
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	probes := []struct {
		name  string
		path  string
		probe func() (bool, error)
	}{
		{"gateway.lock", l.RuntimeLock(), s.RuntimeLockHeld},
		{"host-gateway.lock", filepath.Join(l.LockDir, HostGatewayLock), func() (bool, error) {
			return fileLocked(filepath.Join(l.LockDir, HostGatewayLock))
		}},
	}
	for _, p := range probes {
		for _, pl := range plants {
			t.Run(p.name+", "+pl.name, func(t *testing.T) {
				_ = os.Remove(p.path)
				pl.plant(t, p.path)
				t.Cleanup(func() { _ = os.Remove(p.path) })
				held, err := p.probe()
				if held || !errors.Is(err, safefs.ErrNotRegular) {
					t.Fatalf("probe of %s = %v, %v; want it refused with %v", p.path, held, err, safefs.ErrNotRegular)
				}
			})
		}
	}
}
