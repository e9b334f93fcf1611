//go:build !linux

package cgrouptest

import (
	"errors"
	"testing"
)

func newCgroup(t testing.TB) (dir, path string) {
	t.Skip("cgroups exist only on Linux")
	return "", ""
}

func sub(t testing.TB, _, _ string, _ ...string) string {
	t.Skip("cgroups exist only on Linux")
	return ""
}

func remove(string) error { return errors.ErrUnsupported }
