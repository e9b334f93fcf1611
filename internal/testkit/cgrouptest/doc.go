// Package cgrouptest makes cgroups for tests on Linux: a cgroup of the
// test's own below the one it runs in, with children marked as systemd
// marks a delegated cgroup, all removed (with whatever runs in them) when
// the test ends. It needs root and cgroup v2; where either is missing it
// skips and says why, except under CI (CI set), where it fails: CI runs as
// root on machines with cgroup v2.
package cgrouptest
