package supervisor

import (
	"errors"
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
			h.hold(log.Check(zap.InfoLevel, "held again"))
			h.flush()
		}, []string{"held", "held again"}, []string{"held", "held again"}},
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
			h.hold(log.Check(zap.InfoLevel, "held"), zap.Int("pid", 42))
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
	h.hold(log.Check(zap.InfoLevel, "held"))
	h.flush()
	if !strings.Contains(errOut.String(), "no space left") {
		t.Fatalf("error output %q, want the held line's write error", errOut.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }
