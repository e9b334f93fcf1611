package supervisor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLineHold(t *testing.T) {
	tests := []struct {
		name string
		// then is what follows the held line.
		then func(log *zap.Logger, h *LineHold)
		// want is the messages the info core got, in order, and debug
		// what the debug core got.
		want, debug []string
	}{
		{"nothing follows", func(*zap.Logger, *LineHold) {}, nil, nil},
		{"another line", func(log *zap.Logger, _ *LineHold) { log.Info("next") },
			[]string{"held", "next"}, []string{"held", "next"}},
		{"a line below the info core's level", func(log *zap.Logger, _ *LineHold) { log.Debug("next") },
			[]string{"held"}, []string{"held", "next"}},
		{"a line from a child logger", func(log *zap.Logger, _ *LineHold) { log.Named("sweep").With(zap.Int("n", 1)).Warn("next") },
			[]string{"held", "next"}, []string{"held", "next"}},
		{"the flush", func(_ *zap.Logger, h *LineHold) { h.flush() },
			[]string{"held"}, []string{"held"}},
		{"a sync", func(log *zap.Logger, _ *LineHold) { _ = log.Sync() },
			[]string{"held"}, []string{"held"}},
		{"a second held line", func(log *zap.Logger, h *LineHold) {
			h.hold(log, zap.InfoLevel, "held again")
			h.flush()
		}, []string{"held", "held again"}, []string{"held", "held again"}},
		{"a second held line, then another line", func(log *zap.Logger, h *LineHold) {
			h.hold(log.Named("watchdog").With(zap.Int("n", 1)), zap.InfoLevel, "held again")
			log.Info("next")
		}, []string{"held", "held again", "next"}, []string{"held", "held again", "next"}},
		{"a held line below the info core's level", func(log *zap.Logger, h *LineHold) {
			h.hold(log, zap.DebugLevel, "held at debug")
			h.flush()
		}, []string{"held"}, []string{"held", "held at debug"}},
		{"a line from another goroutine", func(log *zap.Logger, _ *LineHold) {
			done := make(chan struct{})
			go func() { log.Info("next"); close(done) }()
			<-done
		}, []string{"held", "next"}, []string{"held", "next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, infoLogs := observer.New(zapcore.InfoLevel)
			debug, debugLogs := observer.New(zapcore.DebugLevel)
			log, h := HoldLines(zap.New(zapcore.NewTee(info, debug)))
			at := time.Now()
			h.hold(log, zap.InfoLevel, "held", zap.Int("pid", 42))
			if n := infoLogs.Len() + debugLogs.Len(); n != 0 {
				t.Fatalf("the held line was written at once (%d entries)", n)
			}
			tt.then(log, h)

			for _, c := range []struct {
				logs *observer.ObservedLogs
				want []string
			}{{infoLogs, tt.want}, {debugLogs, tt.debug}} {
				got := c.logs.AllUntimed()
				var msgs []string
				for _, e := range got {
					msgs = append(msgs, e.Message)
				}
				if len(msgs) != len(c.want) {
					t.Fatalf("lines %q, want %q", msgs, c.want)
				}
				for i := range msgs {
					if msgs[i] != c.want[i] {
						t.Fatalf("lines %q, want %q", msgs, c.want)
					}
				}
				for _, e := range c.logs.All() {
					if e.Message != "held" {
						continue
					}
					// Its own time, not the write's, and its fields.
					if e.Time.Before(at.Add(-time.Second)) || e.Time.After(at.Add(time.Second)) {
						t.Errorf("held line's time %v, logged at %v", e.Time, at)
					}
					if len(e.Context) != 1 || e.Context[0].Key != "pid" {
						t.Errorf("held line's fields %v, want pid only", e.Context)
					}
				}
			}
		})
	}
}

// TestLineHoldReportsWriteErrors: a held line that cannot be written is
// said on the logger's error output, as any line's failure is.
func TestLineHoldReportsWriteErrors(t *testing.T) {
	var errOut strings.Builder
	log, h := HoldLines(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(failingWriter{}), zapcore.InfoLevel), zap.ErrorOutput(zapcore.AddSync(&errOut))))
	h.hold(log, zap.InfoLevel, "held")
	h.flush()
	if !strings.Contains(errOut.String(), "no space left") {
		t.Fatalf("error output %q, want the held line's write error", errOut.String())
	}
}

// TestLineHoldKeepsEarlierLines: holding a line, from the logger or one
// made from it, does not write the lines held before it; they are written
// together, in order, at the next line.
func TestLineHoldKeepsEarlierLines(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log, h := HoldLines(zap.New(core))
	h.hold(log, zap.InfoLevel, "gateway exited")
	h.hold(log.Named("watchdog").With(zap.Int("pid", 7)), zap.InfoLevel, "hang detection on")
	h.hold(log, zap.InfoLevel, "state")
	h.hold(log, zap.DebugLevel, "restart timing")
	if n := logs.Len(); n != 0 {
		t.Fatalf("%d lines written while held: %v", n, logs.All())
	}
	log.Info("next")
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
	}
	want := []string{"gateway exited", "hang detection on", "state", "restart timing", "next"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if e := logs.All()[1]; e.LoggerName != "watchdog" || e.ContextMap()["pid"] != int64(7) {
		t.Fatalf("held line from a child logger lost its name or fields: %+v", e)
	}
}

// TestLineHoldBound: a hold past maxHeld writes the oldest line held, so
// that a hold never grows without bound; the rest stay held, in order.
func TestLineHoldBound(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log, h := HoldLines(zap.New(core))
	for i := range maxHeld + 1 {
		h.hold(log, zap.InfoLevel, "held", zap.Int("i", i))
	}
	if got := logs.All(); len(got) != 1 || got[0].ContextMap()["i"] != int64(0) {
		t.Fatalf("written past the bound: %v, want the oldest line alone", got)
	}
	h.flush()
	for i, e := range logs.All() {
		if e.ContextMap()["i"] != int64(i) {
			t.Fatalf("line %d is %v: out of order", i, e.ContextMap())
		}
	}
	if n := logs.Len(); n != maxHeld+1 {
		t.Fatalf("%d lines written, want %d", n, maxHeld+1)
	}
}

// TestNilLineHold: a nil hold (a watchdog made without one) writes the
// line at once.
func TestNilLineHold(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	var h *LineHold
	h.hold(zap.New(core), zap.InfoLevel, "at once")
	if logs.Len() != 1 {
		t.Fatalf("%d lines, want the line written at once", logs.Len())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestRestartLinesWaitForTheNextTurn: the lines of a restart (the dead
// gateway's exit, the new one's transition to starting) are not written
// in the loop's turn that started the new gateway, and are written, in
// order, at the end of the next turn, whatever it handles.
func TestRestartLinesWaitForTheNextTurn(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	m := newMachineLogging(t, zap.New(core))
	setup(m, "running")
	m.s.endTurn()
	first := m.gateway()
	// A healthy run: the policy restarts it at once.
	m.clock.now = m.clock.now.Add(time.Hour)
	before := logs.Len()
	m.exit(1)
	m.s.endTurn()
	if len(m.spawns) != 2 || m.s.state != Starting {
		t.Fatalf("no restart at once: %d spawns, state %s", len(m.spawns), m.s.state)
	}
	for _, e := range logs.All()[before:] {
		if e.Message == "gateway exited" || e.Message == "state" {
			t.Fatalf("%q %v written in the turn that started the new gateway", e.Message, e.ContextMap())
		}
	}
	// The next turn: a status request, a timer, any event.
	m.s.endTurn()
	var got []string
	for _, e := range logs.All()[before:] {
		got = append(got, e.Message)
	}
	want := []string{"gateway exited", "state"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines after the next turn %q, want %q", got, want)
	}
	if pid := logs.All()[before].ContextMap()["pid"]; pid != int64(first.pid()) {
		t.Fatalf("exit line names pid %v, want %d", pid, first.pid())
	}
	// A turn that starts nothing writes what it held at its end.
	m.s.hold.hold(m.s.log, zap.InfoLevel, "held")
	m.s.endTurn()
	if e := logs.All()[logs.Len()-1]; e.Message != "held" {
		t.Fatalf("last line %q, want the held one written at the turn's end", e.Message)
	}
}
