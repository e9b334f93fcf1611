package supervisor

import (
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
		then func(log *zap.Logger, h *lineHold)
		// want is the messages the info core got, in order, and debug
		// what the debug core got.
		want, debug []string
	}{
		{"nothing follows", func(*zap.Logger, *lineHold) {}, nil, nil},
		{"another line", func(log *zap.Logger, _ *lineHold) { log.Info("next") },
			[]string{"held", "next"}, []string{"held", "next"}},
		{"a line below the info core's level", func(log *zap.Logger, _ *lineHold) { log.Debug("next") },
			[]string{"held"}, []string{"held", "next"}},
		{"a line from a child logger", func(log *zap.Logger, _ *lineHold) { log.Named("sweep").With(zap.Int("n", 1)).Warn("next") },
			[]string{"held", "next"}, []string{"held", "next"}},
		{"the flush", func(_ *zap.Logger, h *lineHold) { h.flush() },
			[]string{"held"}, []string{"held"}},
		{"a sync", func(log *zap.Logger, _ *lineHold) { _ = log.Sync() },
			[]string{"held"}, []string{"held"}},
		{"a second held line", func(log *zap.Logger, h *lineHold) {
			log.Info("held again", heldLine())
			h.flush()
		}, []string{"held", "held again"}, []string{"held", "held again"}},
		{"a line from another goroutine", func(log *zap.Logger, _ *lineHold) {
			done := make(chan struct{})
			go func() { log.Info("next"); close(done) }()
			<-done
		}, []string{"held", "next"}, []string{"held", "next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, infoLogs := observer.New(zapcore.InfoLevel)
			debug, debugLogs := observer.New(zapcore.DebugLevel)
			h := &lineHold{}
			log := h.wrap(zap.New(zapcore.NewTee(info, debug)))
			at := time.Now()
			log.Info("held", zap.Int("pid", 42), heldLine())
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
					// Its own time, not the write's; its fields, not the mark.
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
