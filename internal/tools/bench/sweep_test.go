//go:build linux

package main

import (
	"testing"
)

// TestSweepOrder checks that each size runs its rounds, no more, and that
// they span the section: a size with few rounds has one in each part.
func TestSweepOrder(t *testing.T) {
	tests := []struct {
		name   string
		rounds []int
	}{
		{"the bench's sizes", []int{30, 30, 30, 5, 5}},
		{"one size", []int{5}},
		{"uneven", []int{7, 30, 4, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := make([]sweepResult, len(tt.rounds))
			for i, n := range tt.rounds {
				rs[i].rounds = n
			}
			order := sweepOrder(rs)
			for i, want := range tt.rounds {
				var at []int // where size i runs in the order
				for j, k := range order {
					if k == i {
						at = append(at, j)
					}
				}
				if len(at) != want {
					t.Fatalf("size %d runs %d rounds, want %d (order %v)", i, len(at), want, order)
				}
				// Its rounds span the section: none is further than a
				// share of it (and one step's worth of other sizes) from
				// the one before, or from the end.
				share := len(order)/want + len(rs)
				for r, j := range append(at, len(order)+at[0]) {
					before := at[0] - share
					if r > 0 {
						before = at[r-1]
					}
					if j-before > share {
						t.Errorf("size %d: %d of the order's %d runs between its rounds, want at most %d (order %v)", i, j-before, len(order), share, order)
					}
				}
			}
		})
	}
}
