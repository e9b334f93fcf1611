package main

import (
	"runtime"
	"sync"
)

// spareP is the P run gives the runtime beyond those it chose (from the
// CPUs this process may use, or GOMAXPROCS in the environment), only while
// a sweep has files enough to keep that many goroutines busy: the spare
// waits in the network poller, so `status` is answered at once during a
// sweep of 100 000 lock files (docs/benchmarks.md §8) instead of at
// sysmon's next look, up to 10 ms later. The rest of the time the runtime
// has only the Ps it chose, and never fewer than two: on one CPU the one P
// is also kept busy by what follows a big sweep (with one P, `status` right
// after the sweep at 100 000 files waited 20 ms in one answer of ten).
// With a spare beyond those, every wake-up of an idle supervisor also
// looked over a P with nothing to do. Run side by side over the same
// minutes, with one keep-alive a second (§6), a supervisor that always had
// the spare took more CPU than one that lends it in each minute of two
// 4-minute runs (14% and 27% more in all), and 5% more with four
// supervisors at once.
type spareP struct {
	mu      sync.Mutex
	chosen  int // the Ps the runtime chose, and how many goroutines a sweep keeps busy
	idle    int // the Ps while no sweep has the spare: chosen, and at least 2
	lenders int // sweeps that asked for the spare and have not given it back
}

// newSpareP notes the Ps the runtime chose and gives it at least two. Make
// one, in run.
func newSpareP() *spareP {
	n := runtime.GOMAXPROCS(0)
	p := &spareP{chosen: n, idle: max(n, 2)}
	runtime.GOMAXPROCS(p.idle)
	return p
}

// lend gives the runtime the spare P until every sweep that asked for it
// has called its done; done may be called more than once.
func (p *spareP) lend() (done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lenders++; p.lenders == 1 {
		runtime.GOMAXPROCS(max(p.chosen+1, p.idle))
	}
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.lenders--; p.lenders == 0 {
			runtime.GOMAXPROCS(p.idle)
		}
	})
}
