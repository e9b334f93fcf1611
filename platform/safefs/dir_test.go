package safefs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestReadBatchesListsAll: every name comes once, in batches of at most
// n, whether the directory ends in a short batch, a full one or none.
func TestReadBatchesListsAll(t *testing.T) {
	const n = 3
	for _, count := range []int{0, 1, n - 1, n, n + 1, 2 * n, 2*n + 1} {
		t.Run(fmt.Sprint(count, "files"), func(t *testing.T) {
			dir := testdir.New(t)
			want := map[string]bool{}
			for i := range count {
				name := fmt.Sprint("f", i)
				want[name] = true
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got := map[string]bool{}
			err = safefs.ReadBatches(d, n, func(des []os.DirEntry) {
				if len(des) == 0 || len(des) > n {
					t.Errorf("a batch of %d, want 1 to %d", len(des), n)
				}
				for _, e := range des {
					if got[e.Name()] {
						t.Errorf("%s listed twice", e.Name())
					}
					got[e.Name()] = true
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("listed %d names, want %d: %v", len(got), len(want), got)
			}
			for name := range want {
				if !got[name] {
					t.Errorf("%s not listed", name)
				}
			}
		})
	}
}
