package cgrouptest

import "testing"

// New makes a cgroup under the test's own and returns its directory and
// its path in the hierarchy (as /proc/<pid>/cgroup names it). Off Linux it
// skips t: only Linux has cgroups.
func New(t testing.TB) (dir, path string) { return newCgroup(t) }

// Sub makes the cgroup dir/name with the xattrs given as name, value
// pairs ("trusted.delegate", "1" marks it delegated as systemd does).
func Sub(t testing.TB, dir, name string, xattrs ...string) string {
	return sub(t, dir, name, xattrs...)
}

// Remove kills whatever runs in dir and below, and removes them all,
// deepest first. Off Linux it returns an error wrapping
// errors.ErrUnsupported.
func Remove(dir string) error { return remove(dir) }
