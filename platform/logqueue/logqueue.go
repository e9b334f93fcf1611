// Package logqueue keeps a log that cannot be written from stopping the
// program that logs: a terminal paused with Ctrl-S, a pipe nobody reads
// (`run 2>&1 | less` left at its prompt), a wedged log collector or a log
// file on a stalled disk block every write(2) to it, and a supervisor
// whose state machine logs would leave its gateway dead until someone
// read the log.
package logqueue

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrStuck is returned by Sync when the output took none of what was
// queued within the wait.
var ErrStuck = errors.New("the log's output takes no writes")

// Queue hands items (log entries) to its output from a goroutine of its
// own, in order, so that Put never blocks on the output. It holds at most
// max bytes of items; one that does not fit is dropped and counted, as is
// one the output loses, and the output is told how many once it takes
// items again.
type Queue[T any] struct {
	deliver func(batch []T) (lost, lostBytes int) // hands a batch to the output; what of it was lost
	note    func(lost, lostBytes int) bool        // says what was lost; false: the output did not take it
	size    func(T) int
	max     int
	wait    time.Duration

	mu        sync.Mutex
	queue     []T
	bytes     int
	queued    uint64 // items ever queued
	handled   uint64 // items ever handed to the output, taken or not
	lost      int    // items dropped or lost, not yet said
	lostBytes int
	progress  chan struct{} // closed, and replaced, whenever handled moves
	wake      chan struct{}
	// held defers the writer's wake (see Hold); pending says one is due.
	held, pending bool
}

// NewQueue returns a Queue of at most max bytes (as size counts them)
// that hands each batch to deliver and each loss to note, and whose Sync
// waits at most wait for the output to take what was queued.
func NewQueue[T any](deliver func([]T) (int, int), note func(int, int) bool, size func(T) int, max int, wait time.Duration) *Queue[T] {
	q := &Queue[T]{deliver: deliver, note: note, size: size, max: max, wait: wait,
		progress: make(chan struct{}), wake: make(chan struct{}, 1)}
	go q.run()
	return q
}

// Put queues item, or counts it as lost when the queue is full. The item
// must not change after: it may wait in the queue.
func (q *Queue[T]) Put(item T) {
	n := q.size(item)
	q.mu.Lock()
	// Once one is lost, the rest wait for the queue to be taken: the note
	// must come between the items before the loss and those after it.
	if q.lost > 0 || q.bytes+n > q.max {
		q.lost++
		q.lostBytes += n
	} else {
		q.queue = append(q.queue, item)
		q.bytes += n
		q.queued++
	}
	// A loss wakes the writer too: its note is due once the output takes
	// items again.
	wake := !q.held
	if q.held {
		q.pending = true
	}
	q.mu.Unlock()
	if wake {
		q.kick()
	}
}

// Hold keeps the writer asleep until Release, with what is queued
// meanwhile: waking it readies a goroutine and a thread to write beside
// the caller, which is what a moment such as a restart's fork must not
// compete with (on a 2-core host the fork took 1 ms instead of 300 µs).
// Nothing is lost but what a crash in between takes.
func (q *Queue[T]) Hold() {
	q.mu.Lock()
	q.held = true
	q.mu.Unlock()
}

// Release ends a Hold, and wakes the writer if anything was queued.
func (q *Queue[T]) Release() {
	q.mu.Lock()
	wake := q.pending
	q.held, q.pending = false, false
	q.mu.Unlock()
	if wake {
		q.kick()
	}
}

// kick wakes the writer, unless a wake is pending.
func (q *Queue[T]) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run hands the queue to the output, then the note on what was lost while
// it filled, for as long as the program runs. An item is lost only while
// the queue is full, and the queue empties only here: the loss taken with
// a batch followed every item in it, and preceded every item queued after.
func (q *Queue[T]) run() {
	var batch []T
	var zero T
	for range q.wake {
		q.mu.Lock()
		batch, q.queue = q.queue, batch[:0]
		q.bytes = 0
		lost, lostBytes := q.lost, q.lostBytes
		q.lost, q.lostBytes = 0, 0
		q.mu.Unlock()

		if len(batch) > 0 {
			l, lb := q.deliver(batch)
			lost, lostBytes = lost+l, lostBytes+lb
		}
		for i := range batch {
			batch[i] = zero // the next batch reuses the array, not the items
		}
		// Not under the lock: the output may block on the note too, and
		// Put must not wait for it.
		if lost > 0 && q.note(lost, lostBytes) {
			lost, lostBytes = 0, 0
		}
		q.mu.Lock()
		q.lost += lost
		q.lostBytes += lostBytes
		q.handled += uint64(len(batch))
		close(q.progress)
		q.progress = make(chan struct{})
		q.mu.Unlock()
	}
}

// Sync waits until what was queued before it is handed to the output; it
// gives up with ErrStuck once the output has taken nothing for the
// Queue's wait, so that a program exits even with its log stuck.
func (q *Queue[T]) Sync() error {
	q.mu.Lock()
	target := q.queued
	q.mu.Unlock()
	q.kick()
	timer := time.NewTimer(q.wait)
	defer timer.Stop()
	for {
		q.mu.Lock()
		done, progress := q.handled >= target, q.progress
		q.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-progress:
			timer.Reset(q.wait)
		case <-timer.C:
			return fmt.Errorf("logqueue: %w for %s", ErrStuck, q.wait)
		}
	}
}
