package logqueue

import (
	"bytes"
	"fmt"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
)

// Writer is a zapcore.WriteSyncer that queues each write (one log entry)
// and writes the queue to its output from a goroutine of its own, all of
// it at once, so that Write never blocks on the output.
type Writer struct {
	out  zapcore.WriteSyncer
	note zapcore.Encoder
	q    *Queue[[]byte]
	buf  []byte // the batch as one write; used by the queue's goroutine only
}

// New returns a Writer onto out, queueing at most max bytes, that spells
// its note on lost entries with note (the log's own encoder) and whose
// Sync waits at most wait for the queue to be written.
func New(out zapcore.WriteSyncer, note zapcore.Encoder, max int, wait time.Duration) *Writer {
	w := &Writer{out: out, note: note}
	w.q = NewQueue(w.write, w.writeNote, func(p []byte) int { return len(p) }, max, wait)
	return w
}

// Write queues a copy of p, or counts it as lost when the queue is full.
// It never fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.q.Put(bytes.Clone(p))
	return len(p), nil
}

// write writes a batch to out at once; entries end in a newline, so those
// cut or not written at all are counted from what out took.
func (w *Writer) write(batch [][]byte) (lost, lostBytes int) {
	w.buf = w.buf[:0]
	for _, p := range batch {
		w.buf = append(w.buf, p...)
	}
	wrote, err := w.out.Write(w.buf)
	if err == nil {
		return 0, 0
	}
	return len(batch) - bytes.Count(w.buf[:wrote], []byte{'\n'}), len(w.buf) - wrote
}

// writeNote writes the entry that says lines entries of size bytes were
// lost, and reports whether out took it.
func (w *Writer) writeNote(lines, size int) bool {
	ent := zapcore.Entry{Level: zapcore.WarnLevel, Time: time.Now(),
		Message: fmt.Sprintf("lost %d log lines, %d bytes: the log's output took no writes", lines, size)}
	buf, err := w.note.EncodeEntry(ent, []zapcore.Field{logfield.Int("lines", lines), logfield.Int("bytes", size)})
	if err != nil {
		return false
	}
	defer buf.Free()
	_, err = w.out.Write(buf.Bytes())
	return err == nil
}

// Hold keeps what is written queued until Release (see Queue.Hold).
func (w *Writer) Hold() { w.q.Hold() }

// Release writes what Hold kept (see Queue.Release).
func (w *Writer) Release() { w.q.Release() }

// Sync waits until what was queued before it is written, then syncs the
// output; it gives up with ErrStuck once the output has taken nothing for
// the Writer's wait.
func (w *Writer) Sync() error {
	if err := w.q.Sync(); err != nil {
		return err
	}
	return w.out.Sync()
}
