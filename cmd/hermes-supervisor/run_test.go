package main

import (
	"runtime"
	"testing"
)

// TestSparePIsLentOnlyWhileASweepFansOut: run's sweeps keep as many
// goroutines busy as the runtime chose Ps; the runtime has one more only
// while at least one sweep that asked for it has not given it back, and a
// done called twice gives back nothing more.
func TestSparePIsLentOnlyWhileASweepFansOut(t *testing.T) {
	chosen := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(chosen) })
	p := newSpareP()
	if p.chosen != chosen {
		t.Fatalf("spareP noted %d Ps; the runtime chose %d", p.chosen, chosen)
	}
	want := func(step string, n int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != n {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", step, got, n)
		}
	}
	want("before any sweep", chosen)
	first := p.lend()
	want("one sweep fanned out", chosen+1)
	second := p.lend()
	want("two sweeps fanned out", chosen+1)
	first()
	first()
	want("one of two sweeps done, twice", chosen+1)
	second()
	want("both sweeps done", chosen)
	p.lend()()
	want("a third sweep done", chosen)
}
