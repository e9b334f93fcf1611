//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUnlinkCost: both rounds are timed, and nothing is left behind.
func TestUnlinkCost(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r, err := unlinkCost(20)
	if err != nil {
		t.Fatal(err)
	}
	if r.files != 20 || r.fresh <= 0 || r.flushed <= 0 {
		t.Fatalf("%+v", r)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "hsbench-unlink*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	t.Logf("per file: fresh %v, written back %v", r.fresh, r.flushed)
}
