package main

import (
	"runtime"
	"testing"
)

// TestSparePIsLentOnlyToABigSweep: run's sweeps keep as many
// goroutines busy as the runtime chose Ps; the runtime has one more only
// while at least one sweep that asked for it has not given it back, and a
// done called twice gives back nothing more. It never has fewer than two:
// with the one P of one CPU busy, `status` would wait for sysmon.
func TestSparePIsLentOnlyToABigSweep(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	for _, chosen := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(chosen)
		idle, lent := max(chosen, 2), max(chosen+1, 2)
		want := func(step string, n int) {
			t.Helper()
			if got := runtime.GOMAXPROCS(0); got != n {
				t.Fatalf("%d Ps chosen, %s: GOMAXPROCS %d, want %d", chosen, step, got, n)
			}
		}
		p := newSpareP()
		if p.chosen != chosen {
			t.Fatalf("spareP noted %d Ps; the runtime chose %d", p.chosen, chosen)
		}
		want("before any sweep", idle)
		first := p.lend()
		want("one sweep fanned out", lent)
		second := p.lend()
		want("two sweeps fanned out", lent)
		first()
		first()
		want("one of two sweeps done, twice", lent)
		second()
		want("both sweeps done", idle)
		p.lend()()
		want("a third sweep done", idle)
	}
}
