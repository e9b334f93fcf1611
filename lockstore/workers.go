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

// parallelBy runs f(0..n-1) on up to w goroutines, the caller's among
// them, one per `per` items at most: fewer than 2*per stay on the
// caller's goroutine, where a second goroutine's thread would take
// longer to wake than they take. Costlier items take a smaller per.
func parallelBy(w, n, per int, f func(i int)) { (*lobby)(nil).parallelBy(w, n, per, f) }

// fileItems is how many items costing about a lock file's read are worth
// a goroutine of their own.
const fileItems = 32

// A lobby is where a goroutine that would otherwise wait finds work: the
// items of the parallel run in progress in it, if any (see help). A
// sweep's judging and acting each have one, so that whichever is ahead
// takes items of the other's batch rather than wait for it, and the
// goroutines a sweep keeps busy stay busy without adding any.
type lobby struct{ cur atomic.Pointer[crew] }

// crews are a sweep's two lobbies; nil for none.
type crews struct{ judging, acting lobby }

func (c *crews) judgingLobby() *lobby {
	if c == nil {
		return nil
	}
	return &c.judging
}

func (c *crews) actingLobby() *lobby {
	if c == nil {
		return nil
	}
	return &c.acting
}

// A crew is one parallel run: n items, taken in turn by whoever works.
type crew struct {
	n          int
	f          func(i int)
	next, left atomic.Int64
	done       chan struct{} // closed once every item is done
}

// work does items of c until none is left to take.
func (c *crew) work() {
	for i := int(c.next.Add(1) - 1); i < c.n; i = int(c.next.Add(1) - 1) {
		c.f(i)
		if c.left.Add(-1) == 0 {
			close(c.done)
		}
	}
}

// parallel is parallelBy of items costing about a lock file's read.
func (l *lobby) parallel(w, n int, f func(i int)) { l.parallelBy(w, n, fileItems, f) }

// parallelBy is the package's parallelBy, with its items offered in l
// (which may be nil) while it runs: it returns once every item is done,
// by whichever goroutine took it.
func (l *lobby) parallelBy(w, n, per int, f func(i int)) {
	workers := min(w, n/per)
	if (workers < 2 && l == nil) || n < 2*per {
		for i := range n {
			f(i)
		}
		return
	}
	c := &crew{n: n, f: f, done: make(chan struct{})}
	c.left.Store(int64(n))
	if l != nil {
		l.cur.Store(c)
		defer l.cur.CompareAndSwap(c, nil)
	}
	for range workers - 1 {
		go c.work()
	}
	c.work()
	<-c.done
}

// help does items of the parallel run in progress in l, if any, until
// none is left to take; it returns at once when none runs.
func (l *lobby) help() {
	if l == nil {
		return
	}
	if c := l.cur.Load(); c != nil {
		c.work()
	}
}

// aheadOf returns a batch function that judges each batch on the
// caller's goroutine while another goroutine acts on the batch before:
// one batch waits judged while another is acted on, so what the sweep
// holds stays bounded by a few batches. That goroutine starts with the
// second batch: a lock dir of one batch, every restart's, is judged and
// acted on in turn, with no goroutine made and no thread woken. Judging
// and acting each have w workers when they take turns, and judgeW and
// actW while both run (Store.shared). Whichever is ahead helps the other
// rather than wait for it: the judge acts on items of the batch being
// acted on (in acting) before it queues the next, and the acting
// goroutine judges items of the batch being judged (in judging) before
// it waits for one. judge and act run their items in those lobbies.
// Call the returned end once the listing is over; it returns when every
// batch has been acted on.
func aheadOf(w, judgeW, actW int, judging, acting *lobby, judge func(names []string, w int) []judged, act func(js []judged, w int)) (each func([]string), end func()) {
	var first []judged
	var held bool
	var acts chan []judged
	acted := make(chan struct{})
	queue := func(js []judged) {
		select {
		case acts <- js:
		default:
			acting.help()
			acts <- js
		}
	}
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
				for {
					var js []judged
					ok := true
					select {
					case js, ok = <-acts:
					default:
						judging.help()
						js, ok = <-acts
					}
					if !ok {
						return
					}
					act(js, actW)
				}
			}()
			acts <- first
			first = nil
		}
		queue(judge(names, judgeW))
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

// batches recycles the slices of a sweep's lock-dir batches once each
// has been handed on and acted on: at about 500 bytes per file they were
// a quarter of what a sweep of 100 000 files allocated, and the collector
// took 15-30% of such a sweep's time. It holds no more slices than there
// are batches in flight (see aheadOf).
type batches struct {
	mu   sync.Mutex
	free [][]judged
}

// get returns n zeroed entries, in a slice done with if one is big enough.
func (b *batches) get(n int) []judged {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.free) > 0 {
		js := b.free[len(b.free)-1]
		b.free = b.free[:len(b.free)-1]
		if cap(js) >= n {
			return js[:n]
		}
	}
	return make([]judged, n)
}

// put takes back js, whose entries nothing uses any more. They are zeroed
// now, so that what they read is not kept alive until the next batch.
func (b *batches) put(js []judged) {
	js = js[:cap(js)]
	clear(js)
	b.mu.Lock()
	b.free = append(b.free, js)
	b.mu.Unlock()
}
