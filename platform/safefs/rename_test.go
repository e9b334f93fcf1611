package safefs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

func TestRenameNoReplace(t *testing.T) {
	tests := []struct {
		name     string
		existing bool // newpath exists before the rename
	}{
		{"free name", false},
		{"taken name", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testdir.New(t)
			oldpath, newpath := filepath.Join(dir, "x.lock"), filepath.Join(dir, "x.lock.corrupt")
			if err := os.WriteFile(oldpath, []byte("new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.existing {
				if err := os.WriteFile(newpath, []byte("first"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := safefs.RenameNoReplace(oldpath, newpath)
			want := map[string]string{newpath: "new"}
			if tt.existing {
				if !errors.Is(err, os.ErrExist) {
					t.Fatalf("err = %v, want os.ErrExist", err)
				}
				want = map[string]string{oldpath: "new", newpath: "first"}
			} else if err != nil {
				t.Fatal(err)
			}
			for p, w := range want {
				if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, []byte(w)) {
					t.Errorf("%s = %q, %v; want %q", filepath.Base(p), b, err, w)
				}
			}
			if _, err := os.Lstat(oldpath); !tt.existing && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("old name left behind: %v", err)
			}
		})
	}
}
