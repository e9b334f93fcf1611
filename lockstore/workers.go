package lockstore

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// How many goroutines a sweep keeps busy. Sweeps of big lock dirs spend
// their time in system calls on independent files, so they finish sooner
// on several goroutines; the supervisor gives the runtime a spare P while
// they run, so that its control endpoint keeps one (see WithWorkers and
// WithFanOut).

// WithWorkers bounds how many goroutines a sweep keeps busy at once to n;
// it returns s. Zero, the default, means GOMAXPROCS. A process that must
// answer while it sweeps (the supervisor's control endpoint) runs with
// more Ps than this while a sweep is big (WithFanOut): Go looks at the
// network from an idle P, else only every 10 ms.
func (s *Store) WithWorkers(n int) *Store {
	s.busyMax = max(n, 0)
	return s
}

// WithFanOut sets what a sweep calls the first time it has files enough
// for more than one goroutine, and calls the function that returns once
// the sweep is done; it returns s. The supervisor gives the runtime one P
// more for that time: a P beyond those the work uses costs every wake-up
// of an idle supervisor something, and is needed only while a big sweep
// keeps the others busy. It is asked for even where the sweep may keep
// only one goroutine busy (WithWorkers(1), or one CPU): that goroutine
// then keeps the only P busy.
func (s *Store) WithFanOut(f func() (done func())) *Store {
	s.onFanOut = f
	return s
}

// workers returns how many goroutines a sweep may keep busy.
func (s *Store) workers() int {
	if s.busyMax > 0 {
		return s.busyMax
	}
	return runtime.GOMAXPROCS(0)
}

// fileItems is how many items costing about a lock file's read are worth
// a goroutine of their own.
const fileItems = 32

// fanOut is one sweep's goroutines: at most w busy at once, and what it
// must give back (WithFanOut) once it first had files enough for more
// than one.
type fanOut struct {
	w    int
	ask  func() (done func())
	undo func()
}

// fanOut starts a sweep's fan-out; the sweep calls its end when done.
func (s *Store) fanOut() *fanOut { return &fanOut{w: s.workers(), ask: s.onFanOut} }

// on is parallelOn on the sweep's goroutines, telling WithFanOut's
// function first when it is the sweep's first call with items enough for
// more than one.
func (p *fanOut) on(n, per int, f func(worker, i int)) {
	if p.undo == nil && p.ask != nil && enoughForTwo(n, per) {
		p.undo = p.ask()
	}
	parallelOn(p.w, n, per, f)
}

// by is on for an f that needs no goroutine number.
func (p *fanOut) by(n, per int, f func(i int)) { p.on(n, per, func(_, i int) { f(i) }) }

// end gives back what the sweep's first fan-out asked for, if it did.
func (p *fanOut) end() {
	if p.undo != nil {
		p.undo()
		p.undo = nil
	}
}

// enoughForTwo reports whether n items, per per goroutine, are worth a
// second goroutine: parallelOn starts one only then, and a sweep asks for
// its fan-out (WithFanOut) only then.
func enoughForTwo(n, per int) bool { return n/per >= 2 }

// parallelOn runs f(worker, 0..n-1) on up to w goroutines, the caller's
// among them, one per `per` items at most, each taking the next item not
// yet taken: fewer than 2*per (enoughForTwo) stay on the caller's
// goroutine, where a second goroutine's thread would take longer to wake
// than they take. It returns once every item is done. worker tells f
// which goroutine runs it: 0 for the caller's, 1 to w-1 for the others,
// each number on one goroutine at a time, so that f may keep what is its
// goroutine's by that number (the sweep's bins) without a lock.
func parallelOn(w, n, per int, f func(worker, i int)) {
	if w < 2 || !enoughForTwo(n, per) {
		for i := range n {
			f(0, i)
		}
		return
	}
	workers := min(w, n/per)
	var next atomic.Int64
	work := func(worker int) {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			f(worker, i)
		}
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for k := range workers - 1 {
		go func() {
			defer wg.Done()
			work(k + 1)
		}()
	}
	work(0)
	wg.Wait()
}

// batch is the entries of one lock-dir batch, reused from one batch to
// the next: at about 500 bytes per file they were a quarter of what a
// sweep of 100 000 files allocated, and the collector took 15-30% of such
// a sweep's time. One batch is judged and handed on at a time.
type batch struct{ js []judged }

// get returns n zeroed entries.
func (b *batch) get(n int) []judged {
	if cap(b.js) < n {
		b.js = make([]judged, n)
	}
	return b.js[:n]
}

// done zeroes the entries handed on, which nothing uses any more, so that
// what they read is not kept alive until the next batch.
func (b *batch) done() { clear(b.js[:cap(b.js)]) }
