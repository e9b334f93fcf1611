//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/sweepbin"
)

// TestBareSweepRemovesOnlyTheStale checks the floor does a sweep's work: a
// floor that removed nothing, or everything, would be no floor.
func TestBareSweepRemovesOnlyTheStale(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		workers int
	}{
		{"one file", 1, 2},
		{"more workers than files", 3, 8},
		{"many files", 200, 2},
		{"one worker", 50, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			keep := map[string]bool{}
			var want []string
			for i := range tt.n {
				name := "f" + strconv.Itoa(i) + ".lock"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"pid": 1}`), 0o600); err != nil {
					t.Fatal(err)
				}
				if layoutKeeps(i) {
					keep[name] = true
					want = append(want, name)
				}
			}
			if err := bareSweep(dir, keep, tt.workers); err != nil {
				t.Fatal(err)
			}
			want = append(want, "bin")
			got, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range got {
				names = append(names, e.Name())
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Fatalf("left %v, want %v", names, want)
			}
			// Each goroutine but the first had a bin of its own in it,
			// as a sweep's have: those stay, empty.
			if bin, err := sweepbin.Files(filepath.Join(dir, "bin")); err != nil || len(bin) != 0 {
				t.Fatalf("bin holds %v (%v), want nothing", bin, err)
			}
			if ws, err := sweepbin.WorkerBins(filepath.Join(dir, "bin")); err != nil || len(ws) != min(tt.workers, tt.n)-1 {
				t.Fatalf("bin holds %d goroutines' bins (%v), want %d", len(ws), err, min(tt.workers, tt.n)-1)
			}
		})
	}
}
