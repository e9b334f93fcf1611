package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

// logFormats are the encoders production logs with (see root.go): zap's
// JSON and console encoders, each wrapped in termtext's escaping.
var logFormats = []struct {
	name string
	enc  func() zapcore.Encoder
}{
	{"json", func() zapcore.Encoder {
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		return termtext.Encoder(zapcore.NewJSONEncoder(cfg))
	}},
	{"console", func() zapcore.Encoder {
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		return termtext.Encoder(zapcore.NewConsoleEncoder(cfg))
	}},
}

// lineFields parses the fields of each "gateway output" entry in out, in
// either format (the console encoder writes them as one JSON object after
// the message).
func lineFields(t *testing.T, out string) []map[string]any {
	t.Helper()
	var entries []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "{") {
			i := strings.Index(l, "\t{")
			if i < 0 {
				t.Fatalf("console line without fields: %q", l)
			}
			l = l[i+1:]
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %v: %q", err, l)
		}
		entries = append(entries, v)
	}
	return entries
}

// lineBytes gives back the bytes of a logged line from whichever field
// holds it, by the rules lineField documents.
func lineBytes(t *testing.T, e map[string]any) []byte {
	t.Helper()
	if s, ok := e["line"].(string); ok {
		return []byte(s)
	}
	if s, ok := e["line_escaped"].(string); ok {
		var out []byte
		for i := 0; i < len(s); i++ {
			if s[i] != '\\' {
				out = append(out, s[i])
				continue
			}
			switch {
			case i+1 < len(s) && s[i+1] == '\\':
				out = append(out, '\\')
				i++
			case i+3 < len(s) && s[i+1] == 'x':
				b, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
				if err != nil {
					t.Fatalf("bad escape at %d in %q", i, s)
				}
				out = append(out, byte(b))
				i += 3
			default:
				t.Fatalf("lone backslash at %d in %q", i, s)
			}
		}
		return out
	}
	if s, ok := e["line_base85"].(string); ok {
		return unbase85(t, s)
	}
	t.Fatalf("entry without a line: %v", e)
	return nil
}

// unbase85 decodes as Python's base64.b85decode does: a short last group
// is padded with the highest digit and the padding's bytes dropped.
func unbase85(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for len(s) > 0 {
		group := s[:min(5, len(s))]
		s = s[len(group):]
		if len(group) == 1 {
			t.Fatalf("a group of one base85 digit")
		}
		padded := group + strings.Repeat("~", 5-len(group))
		var v uint64
		for i := range 5 {
			d := strings.IndexByte(termtext.Base85Alphabet, padded[i])
			if d < 0 {
				t.Fatalf("%q is no base85 digit", padded[i])
			}
			v = v*85 + uint64(d)
		}
		if v > 1<<32-1 {
			t.Fatalf("base85 group %q overflows", group)
		}
		b := []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		out = append(out, b[:len(group)-1]...)
	}
	return out
}

// outputCases are lines a gateway may write, one per entry.
var outputCases = []struct {
	name string
	line []byte
	key  string // the field it is logged as
}{
	{"text", []byte(`INFO gateway: connected to "telegram" in 0.3 s`), "line"},
	{"empty", []byte{}, "line"},
	{"unicode", []byte("héllo wörld 日本語 🎉"), "line"},
	{"windows path", []byte(`C:\Users\ann\.hermes\logs`), "line"},
	{"latin-1", []byte("caf\xe9 cr\xe8me"), "line_escaped"},
	{"literal escape in invalid text", []byte(`a\xff` + "\xff"), "line_escaped"},
	{"cut rune", []byte("ok \xe2\x80"), "line_escaped"},
	{"terminal attack", []byte("\x1b]0;pwned\a\x1b[2J\u202e"), "line_base85"},
	{"bidi in invalid text", []byte("evil\u202etxt \xff"), "line_escaped"},
	{"all backslashes", bytes.Repeat([]byte{'\\'}, 100), "line_base85"},
	{"all controls", bytes.Repeat([]byte{1}, 99), "line_base85"},
	{"binary", randomBytes(1, 4093, false), "line_base85"},
	{"one byte", []byte{0xff}, "line_escaped"},
	{"carriage return inside", []byte("a\rb"), "line"},
}

// randomBytes returns n random bytes from seed; without newlines when nl
// is false (one line).
func randomBytes(seed uint64, n int, nl bool) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
		for !nl && b[i] == '\n' {
			b[i] = byte(r.UintN(256))
		}
	}
	return b
}

// TestOutputRoundTrip logs each line through the production encoders and
// reads its exact bytes back from the entry, in the cheapest field.
func TestOutputRoundTrip(t *testing.T) {
	for _, f := range logFormats {
		t.Run(f.name, func(t *testing.T) {
			var out bytes.Buffer
			l := &lineLogger{log: zap.New(zapcore.NewCore(f.enc(), zapcore.AddSync(&out), zap.InfoLevel)), stream: "stdout"}
			for _, c := range outputCases {
				if _, err := l.Write(append(bytes.Clone(c.line), '\n')); err != nil {
					t.Fatal(err)
				}
			}
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				for _, r := range line {
					if r != '\t' && !strconv.IsGraphic(r) {
						t.Fatalf("raw %U in the log line %q", r, line)
					}
				}
			}
			entries := lineFields(t, out.String())
			if len(entries) != len(outputCases) {
				t.Fatalf("%d lines made %d entries:\n%s", len(outputCases), len(entries), out.String())
			}
			for i, c := range outputCases {
				e := entries[i]
				if _, ok := e[c.key]; !ok {
					t.Errorf("%s: logged as %v, want field %s", c.name, e, c.key)
				}
				if got := lineBytes(t, e); !bytes.Equal(got, c.line) {
					t.Errorf("%s: logged %v, gives back %q, want %q", c.name, e, got, c.line)
				}
			}
		})
	}
}

// TestOutputExpansion bounds what the log holds per byte the gateway
// wrote, for text and for random binary and for the worst lines: 1.25 per
// byte plus the fixed cost of an entry, which is measured as the entry of
// an empty line (plus the longest field name and termtext.TextSlack). The old logger wrote random binary at about 4 per byte.
func TestOutputExpansion(t *testing.T) {
	textLine := `2026-01-02 03:04:05,678 INFO gateway.platforms.telegram: message from "ann" handled in 12 ms (C:\tmp)`
	inputs := []struct {
		name  string
		data  []byte
		ratio float64 // bound on log bytes per gateway byte, entry costs aside
	}{
		{"text", []byte(strings.Repeat(textLine+"\n", 2000)), 1.05},
		{"random binary", randomBytes(2, 1<<20, true), 1.25},
		{"latin-1 text", bytes.ReplaceAll([]byte(strings.Repeat(textLine+"\n", 2000)), []byte("ann"), []byte("\xe9\xe8")), 1.15},
		{"controls", bytes.Repeat([]byte("\x01\x02\x1b[0m\n"), 5000), 1.25},
		{"backslashes and quotes", bytes.Repeat([]byte(`\"\"\"\"\"\"`+"\n"), 5000), 1.25},
	}
	for _, f := range logFormats {
		for _, in := range inputs {
			t.Run(f.name+"/"+in.name, func(t *testing.T) {
				var empty bytes.Buffer
				el := &lineLogger{log: zap.New(zapcore.NewCore(f.enc(), zapcore.AddSync(&empty), zap.InfoLevel)), stream: "stdout"}
				_, _ = el.Write([]byte("\n"))
				// The longest field name, and what a line may cost above
				// base85 to stay text, are the rest of an entry's cost.
				entry := empty.Len() + len("_escaped") + termtext.TextSlack

				var out bytes.Buffer
				l := &lineLogger{log: zap.New(zapcore.NewCore(f.enc(), zapcore.AddSync(&out), zap.InfoLevel)), stream: "stdout"}
				_, _ = l.Write(in.data)
				l.flush()
				lines := bytes.Count(in.data, []byte{'\n'}) + 1
				// +1: a base85 group of fewer than 4 bytes takes one digit more.
				bound := in.ratio*float64(len(in.data)) + float64(lines*(entry+1))
				if got := out.Len(); float64(got) > bound {
					t.Errorf("%d bytes in %d lines logged as %d bytes (%.2f per byte), above %.0f (%.2f per byte, %d per entry)",
						len(in.data), lines, got, float64(got)/float64(len(in.data)), bound, in.ratio, entry)
				}
				t.Logf("%.3f log bytes per gateway byte, %d per entry", float64(out.Len()-lines*empty.Len())/float64(len(in.data)), empty.Len())
			})
		}
	}
}

// entrySink is a log destination that hands over every entry as it is
// written, so that a test waits for an entry instead of sleeping.
type entrySink struct{ entries chan string }

func (s entrySink) Write(p []byte) (int, error) { s.entries <- string(p); return len(p), nil }
func (s entrySink) Sync() error                 { return nil }

// next waits for the next entry.
func (s entrySink) next(t *testing.T) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case e := <-s.entries:
		var v map[string]any
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("not JSON: %q", e)
		}
		return v
	case <-ctx.Done():
		t.Fatal("no log entry came")
		return nil
	}
}

// none fails if an entry is waiting.
func (s entrySink) none(t *testing.T) {
	t.Helper()
	select {
	case e := <-s.entries:
		t.Fatalf("unexpected entry %q", e)
	default:
	}
}

// TestOutputRateLimit floods a limit of a burst of 3 lines per 30 s, with
// an injected clock, and checks every line is either logged or counted,
// the count in one line per interval, at the interval's end, at the next
// line or when the output ends.
func TestOutputRateLimit(t *testing.T) {
	type step struct {
		write   int           // lines of "line N\n" (7 bytes each, N < 10) to write
		advance time.Duration // then move the clock on
		fire    bool          // and wait for the report timer to be made first
		hold    bool          // move the clock on without firing the timer
		close   bool          // then end the output
		logged  int           // gateway lines expected in the log
		report  []int64       // then a suppression line with these lines, bytes
	}
	cases := []struct {
		name  string
		burst int
		steps []step
	}{
		{"under the burst", 3, []step{{write: 3, logged: 3}, {close: true}}},
		{"counted at the interval's end", 3, []step{
			{write: 9, logged: 3},
			{advance: 30 * time.Second, fire: true, report: []int64{6, 42}},
			{write: 2, logged: 2},
			{close: true},
		}},
		{"counted at the next line after the interval", 3, []step{
			{write: 5, logged: 3},
			{advance: 29 * time.Second},
			{write: 1},
			{advance: time.Second, hold: true}, // the interval has passed; its timer is held back
			{write: 1, report: []int64{3, 21}, logged: 1},
			{close: true},
		}},
		{"counted when the output ends", 3, []step{
			{write: 7, logged: 3},
			{close: true, report: []int64{4, 28}},
		}},
		{"off", 0, []step{{write: 9, logged: 9}, {close: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newTestClock()
			sink := entrySink{entries: make(chan string, 100)}
			cfg := zap.NewProductionEncoderConfig()
			log := zap.New(zapcore.NewCore(termtext.Encoder(zapcore.NewJSONEncoder(cfg)), sink, zap.InfoLevel))
			out := newGatewayOutput(log, newOutputLimit(log, clock, c.burst, 30*time.Second), 1)
			l := out.stream("stdout")
			n := 0
			for _, s := range c.steps {
				for range s.write {
					_, _ = fmt.Fprintf(l, "line %d\n", n%10)
					n++
				}
				if s.fire {
					<-clock.made
				}
				if s.advance > 0 {
					clock.advance(s.advance, !s.hold)
				}
				if s.close {
					out.limit.close()
				}
				if s.report != nil {
					e := sink.next(t)
					want := fmt.Sprintf("suppressed %d lines, %d bytes of gateway output", s.report[0], s.report[1])
					if e["msg"] != want || e["lines"] != float64(s.report[0]) || e["bytes"] != float64(s.report[1]) {
						t.Fatalf("got %v, want %q", e, want)
					}
				}
				for range s.logged {
					if e := sink.next(t); e["msg"] != "gateway output" {
						t.Fatalf("got %v, want a line of gateway output", e)
					}
				}
				sink.none(t)
			}
		})
	}
}
