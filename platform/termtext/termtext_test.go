package termtext

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// hostile are strings a gateway, a forged state file or a file name can
// carry, each with what Quote must show for it.
var hostile = []struct {
	name, in, quoted string
}{
	{"clear screen", "ok\x1b[2J", `"ok\x1b[2J"`},
	{"bell", "ding\a", `"ding\a"`},
	{"carriage return", "fine\rforged", `"fine\rforged"`},
	{"fake line", "up\nstate:      running", `"up\nstate:      running"`},
	{"tab", "a\tb", `"a\tb"`},
	{"NUL and DEL", "a\x00b\x7f", `"a\x00b\x7f"`},
	{"OSC title", "\x1b]0;pwned\a", `"\x1b]0;pwned\a"`},
	{"C1 CSI", "x\u009b2J", `"x\u009b2J"`},
	{"C1 NEL", "x\u0085y", `"x\u0085y"`},
	{"line separator", "a\u2028b", `"a\u2028b"`},
	{"paragraph separator", "a\u2029b", `"a\u2029b"`},
	{"bidi override", "evil\u202etxt.exe", `"evil\u202etxt.exe"`},
	{"bidi isolate", "\u2066x\u2069", `"\u2066x\u2069"`},
	{"zero width", "a\u200bb", `"a\u200bb"`},
	{"BOM", "\ufeffa", `"\ufeffa"`},
	{"tag rune", "a\U000e0041", `"a\U000e0041"`},
	{"invalid byte", "a\xffb", `"a\xffb"`},
	{"cut rune", "a\xe2\x80", `"a\xe2\x80"`},
	{"surrogate half", "a\xed\xa0\x80", `"a\xed\xa0\x80"`},
}

// plainText is shown as itself: graphic text of any script, spaces,
// quotes and backslashes (Windows paths) included.
var plainText = []string{
	"", "ready", "Gateway running: 3 platforms", `C:\Users\u\.hermes`, `say "hi"`,
	"/home/ü/héllo wörld", "日本語", "emoji 🎉", "nbsp\u00a0here", "\ufffd is a real rune",
}

func TestQuote(t *testing.T) {
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			got := Quote(tt.in)
			if got != tt.quoted {
				t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.quoted)
			}
			assertSafe(t, got, "")
			if back, err := strconv.Unquote(got); err != nil || back != tt.in {
				t.Errorf("Quote(%q) = %s does not unquote back: %q, %v", tt.in, got, back, err)
			}
		})
	}
	for _, s := range plainText {
		if got := Quote(s); got != s {
			t.Errorf("Quote(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestQuoteLong escapes a control rune at the very end of a long string:
// nothing is cut, and nothing slips through past a length.
func TestQuoteLong(t *testing.T) {
	long := strings.Repeat("é", 1<<20) + "\x1b[2J"
	got := Quote(long)
	assertSafe(t, got, "")
	if !strings.HasSuffix(got, `\x1b[2J"`) {
		t.Errorf("Quote of a long string ends %q", got[len(got)-20:])
	}
	if back, err := strconv.Unquote(got); err != nil || back != long {
		t.Errorf("the long string does not round-trip: %v", err)
	}
}

func TestLine(t *testing.T) {
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			got := Line(tt.in)
			assertSafe(t, got, "\t")
			if strings.Contains(tt.in, "\t") {
				return // a JSON encoder escapes a tab itself
			}
			// Inside a JSON string the escaped text decodes to the
			// original (an invalid byte to U+FFFD, as JSON encoders have it).
			var back string
			if err := json.Unmarshal([]byte(`"`+got+`"`), &back); err != nil {
				t.Fatalf("Line(%q) = %q is no JSON string body: %v", tt.in, got, err)
			}
			if want := validUTF8(tt.in); back != want {
				t.Errorf("Line(%q) = %q decodes to %q, want %q", tt.in, got, back, want)
			}
		})
	}
	for _, s := range append(plainText, "a\tb") {
		if got := Line(s); got != s {
			t.Errorf("Line(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestEncoder logs hostile text as the message, as a string field, as
// bytes and as an error, in both formats: no raw control reaches the
// line, a JSON line parses back to the very values, a console line stays
// one line.
func TestEncoder(t *testing.T) {
	cfg := zap.NewProductionEncoderConfig()
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			var enc zapcore.Encoder
			if format == "json" {
				enc = zapcore.NewJSONEncoder(cfg)
			} else {
				enc = zapcore.NewConsoleEncoder(cfg)
			}
			var out bytes.Buffer
			log := zap.New(zapcore.NewCore(Encoder(enc), zapcore.AddSync(&out), zapcore.DebugLevel)).With(zap.String("home", "/h\u202e"))
			for _, tt := range hostile {
				log.Info("msg "+tt.in, zap.String("status", tt.in), zap.ByteString("line", []byte(tt.in)), zap.Error(errString(tt.in)))
			}
			lines := strings.SplitAfter(out.String(), "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			if len(lines) != len(hostile) {
				t.Fatalf("%d entries made %d lines:\n%s", len(hostile), len(lines), out.String())
			}
			for i, l := range lines {
				tt := hostile[i]
				assertSafe(t, strings.TrimSuffix(l, "\n"), "\t")
				if format != "json" {
					continue
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Errorf("%s: not JSON: %v\n%s", tt.name, err, l)
					continue
				}
				want := validUTF8(tt.in)
				if v["status"] != want || v["line"] != want || v["error"] != want || v["msg"] != "msg "+want || v["home"] != "/h\u202e" {
					t.Errorf("%s: values changed: %v", tt.name, v)
				}
			}
		})
	}
}

// validUTF8 replaces each invalid byte of s by U+FFFD, as zap does.
func validUTF8(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

type errString string

func (e errString) Error() string { return string(e) }

// assertSafe fails when s holds a rune a terminal would act on, allowed
// aside.
func assertSafe(t *testing.T, s, allowed string) {
	t.Helper()
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			t.Errorf("invalid byte %q at %d in %q", s[i], i, s)
			continue
		}
		if !strconv.IsGraphic(r) && !strings.ContainsRune(allowed, r) {
			t.Errorf("raw %U at %d in %q", r, i, s)
		}
	}
}
