package supervisor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLineLoggerMarksCut cuts lines longer than maxLogLine and says by
// how much, in a field of its own (the line stays exact bytes).
func TestLineLoggerMarksCut(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+5000)
	cases := []struct {
		name   string
		writes []string
		want   []string
		cut    []int
	}{
		{"short lines", []string{"a\nb\r\n", "c"}, []string{"a", "b", "c"}, []int{0, 0, 0}},
		{"long line in one write", []string{long + "\nnext\n"}, []string{strings.Repeat("x", maxLogLine), "next"}, []int{5000, 0}},
		{"long line in pieces", []string{long[:10000], long[10000:], "\n"}, []string{strings.Repeat("x", maxLogLine)}, []int{5000}},
		{"exactly the limit", []string{long[:maxLogLine] + "\n"}, []string{long[:maxLogLine]}, []int{0}},
		{"cut at EOF", []string{long}, []string{strings.Repeat("x", maxLogLine)}, []int{5000}},
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
			var cut []int
			dec := json.NewDecoder(&out)
			for dec.More() {
				var e struct {
					Line string
					Cut  int `json:"cut_bytes"`
				}
				if err := dec.Decode(&e); err != nil {
					t.Fatal(err)
				}
				got, cut = append(got, e.Line), append(cut, e.Cut)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("line %d: %.40q…%q (len %d), want len %d ending %q", i, got[i], got[i][max(len(got[i])-30, 0):], len(got[i]), len(c.want[i]), c.want[i][max(len(c.want[i])-30, 0):])
				}
				if cut[i] != c.cut[i] {
					t.Errorf("line %d: cut_bytes %d, want %d", i, cut[i], c.cut[i])
				}
			}
		})
	}
}
