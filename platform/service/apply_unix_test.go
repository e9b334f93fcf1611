//go:build unix

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
				t.Fatal(err)
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

// TestApplyNeverGoesThroughALinkedDirectory plants the link one level up:
// the definition's directory is another user's link to a directory of
// root's, as a user could make ~/.config/systemd/user point at
// /etc/systemd/system before root runs install with their HOME. Writing
// and removing there is refused, and nothing is written or removed where
// the link points. (A link of our own is ours to follow.)
func TestApplyNeverGoesThroughALinkedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a link of another user's needs root to make")
	}
	dir := testdir.New(t)
	elsewhere := filepath.Join(dir, "etc-systemd-system")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(elsewhere, "hermes-supervisor.service")
	if err := os.WriteFile(victim, []byte("root's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	units := filepath.Join(dir, "user")
	if err := os.Symlink(elsewhere, units); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(units, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(units, "hermes-supervisor.service")
	for _, p := range []Plan{
		{Steps: []Step{{Write: &File{Path: unit, Mode: 0o644, Data: []byte("[Unit]\n")}}}},
		{Steps: []Step{{Remove: unit}}},
	} {
		if err := p.Apply(context.Background(), nil); err == nil {
			t.Errorf("%+v through a linked directory: no error", p.Steps[0])
		}
		if got, err := os.ReadFile(victim); err != nil || string(got) != "root's own\n" {
			t.Fatalf("the file where the link points became %q, %v", got, err)
		}
		if left, _ := os.ReadDir(elsewhere); len(left) != 1 {
			t.Errorf("the directory the link points at holds %v", left)
		}
	}
}

// TestApplyNeverWritesInAnotherUsersDirectory is root, with a HOME that
// is another user's (su -p, a doas that keeps it): the user's unit
// directory is theirs, so root writes nothing there.
func TestApplyNeverWritesInAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a directory of another user's needs root to make")
	}
	units := filepath.Join(testdir.New(t), "user")
	if err := os.Mkdir(units, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(units, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	p := Plan{Steps: []Step{{Write: &File{Path: filepath.Join(units, "hermes-supervisor.service"), Mode: 0o644, Data: []byte("[Unit]\n")}}}}
	if err := p.Apply(context.Background(), nil); err == nil {
		t.Error("root wrote a definition into another user's directory")
	}
	if left, _ := os.ReadDir(units); len(left) != 0 {
		t.Errorf("the directory holds %v", left)
	}
}
