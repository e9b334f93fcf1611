package lockstore

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// How many goroutines a sweep keeps busy, and how judging and acting
// share them. Sweeps of big lock dirs spend their time in system calls on
// independent files, so they finish sooner on several goroutines; the
// supervisor bounds them below GOMAXPROCS so that its control endpoint
// keeps a P (see WithWorkers).

// WithWorkers bounds how many goroutines a sweep keeps busy at once,
// judging and acting together, to n; it returns s. Zero, the default,
// means GOMAXPROCS. A process that must answer while it sweeps (the
// supervisor's control endpoint) runs with more Ps than this: Go looks
// at the network from an idle P, else only every 10 ms.
func (s *Store) WithWorkers(n int) *Store {
	s.busyMax = max(n, 0)
	return s
}

// workers returns how many goroutines a sweep may keep busy.
func (s *Store) workers() int {
	if s.busyMax > 0 {
		return s.busyMax
	}
	return runtime.GOMAXPROCS(0)
}

// shared returns how many goroutines judge and how many act while the
// two run at once; when they take turns, each has all of workers(). A
// bound store splits its bound between them; an unbound one gives each
// GOMAXPROCS and leaves the sharing to Go's scheduler.
func (s *Store) shared() (judge, act int) {
	w := s.workers()
	if s.busyMax == 0 {
		return w, w
	}
	return (w + 1) / 2, max(w/2, 1)
}

// parallel runs f(0..n-1) on up to w goroutines, the caller's among
// them, one per 32 items at most: fewer than 64 stay on the caller's
// goroutine.
func parallel(w, n int, f func(i int)) {
	workers := min(w, n/32)
	if workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			f(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// aheadOf returns a batch function that judges each batch on the
// caller's goroutine while another goroutine acts on the batch before:
// one batch waits judged while another is acted on, so what the sweep
// holds stays bounded by a few batches. That goroutine starts with the
// second batch: a lock dir of one batch, every restart's, is judged and
// acted on in turn, with no goroutine made and no thread woken. Judging
// and acting each have w workers when they take turns, and judgeW and
// actW while both run (Store.shared). Call the returned end once the
// listing is over; it returns when every batch has been acted on.
func aheadOf(w, judgeW, actW int, judge func(names []string, w int) []judged, act func(js []judged, w int)) (each func([]string), end func()) {
	var first []judged
	var held bool
	var acts chan []judged
	acted := make(chan struct{})
	each = func(names []string) {
		switch {
		case acts != nil:
		case !held:
			first, held = judge(names, w), true
			return
		default:
			acts = make(chan []judged, 1)
			go func() {
				defer close(acted)
				for js := range acts {
					act(js, actW)
				}
			}()
			acts <- first
			first = nil
		}
		acts <- judge(names, judgeW)
	}
	end = func() {
		if acts == nil {
			if held {
				act(first, w)
			}
			return
		}
		close(acts)
		<-acted
	}
	return each, end
}
