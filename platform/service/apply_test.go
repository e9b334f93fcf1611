package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestApplyWriteNeverFollowsALink plants a link where the plan writes a
// definition: the write must replace the link, never write through it,
// whether it dangles (a file would be made where it points) or names a
// file (which would be overwritten).
func TestApplyWriteNeverFollowsALink(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool // the link's target exists
	}{
		{"dangling link", false},
		{"link to a file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testdir.New(t)
			target := filepath.Join(dir, "profile.d", "zz.sh")
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.existing {
				if err := os.WriteFile(target, []byte("kept\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			unit := filepath.Join(dir, "units", "hermes-supervisor.service")
			if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, unit); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
			var p Plan
			p.write(unit, 0o644, []byte("[Unit]\n"))
			if err := p.Apply(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(unit)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("after Apply the definition is %v (%v), want a regular file in the link's place", fi, err)
			}
			if got, _ := os.ReadFile(unit); string(got) != "[Unit]\n" {
				t.Errorf("the definition holds %q", got)
			}
			if fi.Mode().Perm() != 0o644 {
				t.Errorf("the definition has mode %v, want 0644", fi.Mode().Perm())
			}
			got, err := os.ReadFile(target)
			switch {
			case !tc.existing && err == nil:
				t.Errorf("a file was made through the dangling link: %q", got)
			case tc.existing && string(got) != "kept\n":
				t.Errorf("the link's target was overwritten: %q (%v)", got, err)
			}
			left, _ := os.ReadDir(filepath.Dir(unit))
			if len(left) != 1 {
				t.Errorf("the directory holds %d names, want the definition alone: %v", len(left), left)
			}
		})
	}
}
