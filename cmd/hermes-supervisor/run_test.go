package main

import (
	"runtime"
	"testing"
)

// TestSparePKeepsOnePFree: run's sweeps keep as many goroutines busy as
// the runtime chose Ps, and it has one more, which waits on the network.
func TestSparePKeepsOnePFree(t *testing.T) {
	chosen := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(chosen) })
	if got := spareP(); got != chosen {
		t.Fatalf("spareP returned %d sweep workers; the runtime chose %d Ps", got, chosen)
	}
	if got := runtime.GOMAXPROCS(0); got != chosen+1 {
		t.Fatalf("GOMAXPROCS %d after spareP; want %d", got, chosen+1)
	}
}
