package supervisor

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LineHold lets the state machine hold a restart's own log lines back
// from the new gateway's first milliseconds: the dead gateway's "gateway
// exited", the new one's "hang detection on" and its transition to
// starting. Encoding and writing one took 50 µs, a tenth of all the
// restart adds to a bare fork/exec; before the fork that is on the
// restart's path, and right after it, it took a CPU from the gateway's
// own start (a journald that a line wakes takes another). The held lines
// keep their time, their fields and their order: they are written before
// any later line of the logger HoldLines made, or of any logger made from
// that one, from any goroutine, and at the latest at the state machine's
// next turn, which a start's first readiness poll brings 5 ms later.
// Write errors are reported as the logger's own are. Only a crash in
// between loses them. A core that stamps lines itself (journald's) gives
// them the time of their write.
type LineHold struct {
	mu   sync.Mutex
	held []heldLine // oldest first
}

type heldLine struct {
	ce     *zapcore.CheckedEntry
	fields []zap.Field
}

// maxHeld bounds the lines held at once: a restart holds four at most,
// and a hold past the bound writes the oldest.
const maxHeld = 8

// HoldLines returns log made to write the lines its LineHold holds before
// any later line, and that LineHold. Every logger that must keep the held
// lines in their place is made from the one returned.
func HoldLines(log *zap.Logger) (*zap.Logger, *LineHold) {
	h := &LineHold{}
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return holdCore{Core: c, h: h} })), h
}

// hold holds a line of log, at lvl with msg and fields, behind the lines
// held before it; a level log does not write holds nothing. log is the
// logger HoldLines returned or one made from it: its line is checked
// past the hold, so that checking it does not write the lines it is to
// follow. A nil h writes the line at once.
func (h *LineHold) hold(log *zap.Logger, lvl zapcore.Level, msg string, fields ...zap.Field) {
	if h == nil {
		log.Log(lvl, msg, fields...)
		return
	}
	ce := log.WithOptions(zap.WrapCore(pastHold)).Check(lvl, msg)
	if ce == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) == maxHeld {
		h.writeLocked(1)
	}
	h.held = append(h.held, heldLine{ce, fields})
}

// flush writes the held lines, if any.
func (h *LineHold) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeLocked(len(h.held))
}

// writeLocked writes the n oldest held lines under mu: a line checked
// meanwhile on another goroutine waits for them in Check, and so comes
// after them.
func (h *LineHold) writeLocked(n int) {
	for _, l := range h.held[:n] {
		l.ce.Write(l.fields...)
	}
	h.held = append(h.held[:0], h.held[n:]...)
	clear(h.held[len(h.held):cap(h.held)])
}

// pastHold is the core under a holdCore: a line checked through it is not
// a later line to the ones held.
func pastHold(c zapcore.Core) zapcore.Core {
	if hc, ok := c.(holdCore); ok {
		return hc.Core
	}
	return c
}

// holdCore writes the held lines before any line its logger is about to
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
