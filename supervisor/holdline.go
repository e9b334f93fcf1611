package supervisor

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// lineHold lets the state machine hold back one log line, the dead
// gateway's "gateway exited", from its restart's path: encoding and
// writing it took 50 µs there, a tenth of all the restart adds to a bare
// fork/exec. The held line keeps its time and its place: it is written
// before any other line of the supervisor's, from any goroutine, and at
// the latest when the event that held it has been handled (see flush).
// Nothing is dropped: a held line is only ever delayed.
type lineHold struct {
	mu   sync.Mutex
	core zapcore.Core // the core the held entry is written to
	ent  zapcore.Entry
	with []zapcore.Field
}

// heldLine marks a line to be held rather than written at once: a field
// that encodes to nothing, told from zap.Skip by its key.
func heldLine() zap.Field { return zap.Field{Key: holdKey, Type: zapcore.SkipType} }

const holdKey = "hermes-supervisor:hold"

// wrap makes log hold back lines marked with heldLine (see lineHold).
func (h *lineHold) wrap(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return holdCore{Core: c, h: h} }))
}

// flush writes the held line, if any.
func (h *lineHold) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushLocked()
}

func (h *lineHold) flushLocked() {
	if h.core == nil {
		return
	}
	c, ent, fields := h.core, h.ent, h.with
	h.core, h.with = nil, nil
	writeChecked(c, ent, fields)
}

// writeChecked writes ent through c's own level check, so that a core
// made of several (zapcore.NewTee) writes it only where it is enabled.
func writeChecked(c zapcore.Core, ent zapcore.Entry, fields []zapcore.Field) {
	if ce := c.Check(ent, nil); ce != nil {
		ce.Write(fields...)
	}
}

type holdCore struct {
	zapcore.Core
	h *lineHold
}

func (c holdCore) With(fields []zapcore.Field) zapcore.Core {
	return holdCore{Core: c.Core.With(fields), h: c.h}
}

func (c holdCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c holdCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	c.h.flushLocked()
	for i, f := range fields {
		if f.Type == zapcore.SkipType && f.Key == holdKey {
			// A second line held before the first was written cannot
			// happen on the one goroutine that holds; were it to, the
			// first was flushed just above.
			c.h.core, c.h.ent = c.Core, ent
			c.h.with = append(append([]zapcore.Field(nil), fields[:i]...), fields[i+1:]...)
			return nil
		}
	}
	writeChecked(c.Core, ent, fields)
	return nil
}

func (c holdCore) Sync() error {
	c.h.flush()
	return c.Core.Sync()
}
