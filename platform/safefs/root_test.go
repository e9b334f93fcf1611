package safefs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

func TestRootStampSameFile(t *testing.T) {
	tests := []struct {
		name     string
		replace  bool // another file of the same name and bytes takes its place
		wantSame bool
	}{
		{"unchanged", false, true},
		{"replaced with the same bytes", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testdir.New(t)
			p := filepath.Join(dir, "x.lock")
			if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			b, judged, err := safefs.ReadRegular(p, 100)
			if err != nil || string(b) != "{}" {
				t.Fatalf("read %q, %v", b, err)
			}
			if tt.replace {
				if err := os.WriteFile(p+".new", []byte("{}"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(p+".new", p); err != nil {
					t.Fatal(err)
				}
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			now, err := safefs.RootStamp(root, "x.lock")
			if err != nil {
				t.Fatal(err)
			}
			if got := now.SameFile(judged); got != tt.wantSame {
				t.Errorf("SameFile = %v, want %v", got, tt.wantSame)
			}
			b, read, err := safefs.ReadRoot(root, "x.lock", 100)
			if err != nil || string(b) != "{}" || !read.Same(now) {
				t.Errorf("ReadRoot = %q, %v, same stamp %v", b, err, read.Same(now))
			}
		})
	}
}
