//go:build unix

package platform_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform"
)

func TestRootStampRefusesSymlink(t *testing.T) {
	dir := testdir.New(t)
	outside := testdir.New(t)
	target := filepath.Join(outside, "x.lock")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "x.lock")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := platform.RootStamp(root, "x.lock"); !errors.Is(err, platform.ErrNotRegular) {
		t.Errorf("RootStamp of a symlink: %v, want ErrNotRegular", err)
	}
	if _, _, err := platform.ReadRoot(root, "x.lock", 100); err == nil {
		t.Error("ReadRoot followed a symlink out of its root")
	}
}
