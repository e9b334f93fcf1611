package supervisor

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LineHold lets the state machine hold one log line, the dead gateway's
// "gateway exited", back from its restart's path: encoding and writing it
// took 50 µs there, a tenth of all the restart adds to a bare fork/exec.
// The held line keeps its time, its fields and its place: it is written
// before any later line of the logger HoldLines made, or of any logger
// made from that one, from any goroutine, and at the latest at flush: the
// state machine flushes once the event that held it is handled, or, when
// that event started a gateway, once the start settles (Supervisor.settle),
// 3 ms later. Write errors are reported as the
// logger's own are. Only a crash in between loses it. A core that stamps
// lines itself (journald's) gives it the time of its write.
type LineHold struct {
	mu     sync.Mutex
	ce     *zapcore.CheckedEntry // the line held, nil for none
	fields []zap.Field
	// writers are outputs whose writes wait with it (HoldWrites); only
	// the state machine's goroutine pauses and resumes them.
	writers []HeldWriter
	paused  bool
}

// HeldWriter is a log output that can keep its writes waiting, as
// platform/logqueue's do: its writer, woken beside a restart's fork,
// competes with it for the CPU (on a 2-core host the fork took 1 ms
// instead of 300 µs).
type HeldWriter interface {
	Hold()
	Release()
}

// HoldWrites makes ws keep their writes waiting from a gateway's exit
// until its restart settles, as the exit's line waits: what is logged on
// the restart's path is written after the fork. Only a crash in between
// loses it.
func (h *LineHold) HoldWrites(ws ...HeldWriter) {
	h.writers = append(h.writers, ws...)
}

// pauseWrites holds the writers' writes, on the state machine's goroutine.
func (h *LineHold) pauseWrites() {
	if h.paused {
		return
	}
	for _, w := range h.writers {
		w.Hold()
	}
	h.paused = true
}

// resumeWrites ends pauseWrites.
func (h *LineHold) resumeWrites() {
	if !h.paused {
		return
	}
	for _, w := range h.writers {
		w.Release()
	}
	h.paused = false
}

// HoldLines returns log made to write the line its LineHold holds before
// any later line, and that LineHold. Every logger that must keep the held
// line in its place is made from the one returned.
func HoldLines(log *zap.Logger) (*zap.Logger, *LineHold) {
	h := &LineHold{}
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return holdCore{Core: c, h: h} })), h
}

// hold holds ce's line, with fields, writing first a line held before; a
// nil ce, a level that is off, holds nothing.
func (h *LineHold) hold(ce *zapcore.CheckedEntry, fields ...zap.Field) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeLocked()
	h.ce, h.fields = ce, fields
}

// flush writes the held line, if any.
func (h *LineHold) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeLocked()
}

// writeLocked writes the held line under mu: a line checked meanwhile on
// another goroutine waits for it in Check, and so comes after it.
func (h *LineHold) writeLocked() {
	if h.ce == nil {
		return
	}
	ce, fields := h.ce, h.fields
	h.ce, h.fields = nil, nil
	ce.Write(fields...)
}

// holdCore writes the held line before any line its logger is about to
// write: zap checks every line it writes, and only those.
type holdCore struct {
	zapcore.Core
	h *LineHold
}

func (c holdCore) With(fields []zapcore.Field) zapcore.Core {
	return holdCore{Core: c.Core.With(fields), h: c.h}
}

func (c holdCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	c.h.flush()
	return c.Core.Check(ent, ce)
}

func (c holdCore) Sync() error {
	c.h.flush()
	return c.Core.Sync()
}
