package supervisor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestLineLoggerMarksCut(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+5000)
	cases := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"short lines", []string{"a\nb\r\n", "c"}, []string{"a", "b", "c"}},
		{"long line in one write", []string{long + "\nnext\n"}, []string{strings.Repeat("x", maxLogLine) + " … [5000 bytes cut]", "next"}},
		{"long line in pieces", []string{long[:10000], long[10000:], "\n"}, []string{strings.Repeat("x", maxLogLine) + " … [5000 bytes cut]"}},
		{"exactly the limit", []string{long[:maxLogLine] + "\n"}, []string{long[:maxLogLine]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A real encoder: it encodes at once, as in production, while
			// an observer would keep the reused buffer.
			var out bytes.Buffer
			core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zap.InfoLevel)
			l := &lineLogger{log: zap.New(core), stream: "stdout"}
			for _, w := range c.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			l.flush()
			var got []string
			dec := json.NewDecoder(&out)
			for dec.More() {
				var e struct{ Line string }
				if err := dec.Decode(&e); err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Line)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("line %d: %.40q…%q (len %d), want len %d ending %q", i, got[i], got[i][max(len(got[i])-30, 0):], len(got[i]), len(c.want[i]), c.want[i][max(len(c.want[i])-30, 0):])
				}
			}
		})
	}
}
