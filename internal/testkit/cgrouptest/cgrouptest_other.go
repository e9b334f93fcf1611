//go:build !linux

package cgrouptest

import (
	"errors"
	"testing"
)

func newCgroup(t testing.TB) (dir, path string) {
	t.Fatal("cgroups exist only on Linux: use cgrouptest from a _linux_test.go")
	return "", ""
}

func sub(t testing.TB, _, _ string, _ ...string) string {
	t.Fatal("cgroups exist only on Linux: use cgrouptest from a _linux_test.go")
	return ""
}

func remove(string) error { return errors.ErrUnsupported }
