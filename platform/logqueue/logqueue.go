// Package logqueue keeps a log that cannot be written from stopping the
// program that logs: a terminal paused with Ctrl-S, a pipe nobody reads
// (`run 2>&1 | less` left at its prompt), a wedged log collector or a log
// file on a stalled disk block every write(2) to it, and a supervisor
// whose state machine logs would leave its gateway dead until someone
// read the log.
package logqueue

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
)

// ErrStuck is returned by Sync when the output took none of what was
// queued within the wait.
var ErrStuck = errors.New("the log's output takes no writes")

// Writer is a zapcore.WriteSyncer that queues each write (one log entry)
// and hands the queue to its output from a goroutine of its own, so that
// Write never blocks on the output. The queue holds at most max bytes;
// an entry that does not fit is dropped and counted, as is one the output
// refuses, and the output gets one entry saying how many once it takes
// writes again.
type Writer struct {
	out  zapcore.WriteSyncer
	note zapcore.Encoder
	max  int
	wait time.Duration

	mu        sync.Mutex
	queue     []byte
	entries   int    // entries in queue
	queued    uint64 // entries ever queued
	handled   uint64 // entries ever handed to out, written or not
	lost      int    // entries dropped or refused, not yet noted
	lostBytes int64
	progress  chan struct{} // closed, and replaced, whenever handled moves
	wake      chan struct{}
}

// New returns a Writer onto out, queueing at most max bytes, that spells
// its note on lost entries with note (the log's own encoder) and whose
// Sync waits at most wait for the queue to be written.
func New(out zapcore.WriteSyncer, note zapcore.Encoder, max int, wait time.Duration) *Writer {
	w := &Writer{out: out, note: note, max: max, wait: wait,
		progress: make(chan struct{}), wake: make(chan struct{}, 1)}
	go w.run()
	return w
}

// Write queues a copy of p, or counts it as lost when the queue is full.
// It never fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if len(w.queue)+len(p) > w.max {
		w.lost++
		w.lostBytes += int64(len(p))
	} else {
		w.queue = append(w.queue, p...)
		w.entries++
		w.queued++
	}
	w.mu.Unlock()
	// A loss wakes the writer too: its note is due once out takes writes.
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// run writes the queue to out, all of it at once, then the note on what
// was lost while it filled, for as long as the program runs. An entry is
// lost only while the queue is full, and the queue empties only here: the
// loss taken with a batch followed every entry in it, and preceded every
// entry queued after.
func (w *Writer) run() {
	var batch []byte
	for range w.wake {
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		n, lost, lostBytes := w.entries, w.lost, w.lostBytes
		w.entries, w.lost, w.lostBytes = 0, 0, 0
		w.mu.Unlock()

		if len(batch) > 0 {
			if wrote, err := w.out.Write(batch); err != nil {
				// Entries end in a newline: those cut or not written at all.
				lost += n - bytes.Count(batch[:wrote], []byte{'\n'})
				lostBytes += int64(len(batch) - wrote)
			}
		}
		w.mu.Lock()
		if lost > 0 && !w.writeNote(lost, lostBytes) {
			w.lost += lost
			w.lostBytes += lostBytes
		}
		w.handled += uint64(n)
		close(w.progress)
		w.progress = make(chan struct{})
		w.mu.Unlock()
	}
}

// writeNote writes the entry that says lines entries of size bytes were
// lost, and reports whether out took it.
func (w *Writer) writeNote(lines int, size int64) bool {
	ent := zapcore.Entry{Level: zapcore.WarnLevel, Time: time.Now(),
		Message: fmt.Sprintf("lost %d log lines, %d bytes: the log's output took no writes", lines, size)}
	buf, err := w.note.EncodeEntry(ent, []zapcore.Field{logfield.Int("lines", lines), logfield.Int("bytes", int(size))})
	if err != nil {
		return false
	}
	defer buf.Free()
	_, err = w.out.Write(buf.Bytes())
	return err == nil
}

// Sync waits until what was queued before it is handed to the output,
// then syncs the output; it gives up with ErrStuck once the output has
// taken nothing for the Writer's wait, so that a program exits even with
// its log stuck.
func (w *Writer) Sync() error {
	w.mu.Lock()
	target := w.queued
	w.mu.Unlock()
	timer := time.NewTimer(w.wait)
	defer timer.Stop()
	for {
		w.mu.Lock()
		done, progress := w.handled >= target, w.progress
		w.mu.Unlock()
		if done {
			return w.out.Sync()
		}
		select {
		case <-progress:
			timer.Reset(w.wait)
		case <-timer.C:
			return fmt.Errorf("logqueue: %w for %s", ErrStuck, w.wait)
		}
	}
}
