// Package termtext makes text we did not write safe to print: a gateway's
// STATUS= line, a state file's fields and the names of files in the home
// and lock dir reach a terminal or a log line only through it.
//
// One rule decides what is shown as itself: a rune that strconv.IsGraphic
// accepts (letters, marks, numbers, punctuation, symbols and the Zs
// spaces), in valid UTF-8. Everything else (C0 and C1 controls, DEL, line
// and paragraph separators, bidi overrides and other format runes, invalid
// bytes) is shown as an escape, never written: it could move the cursor,
// clear the screen, retitle the window, forge a line or reorder what the
// reader sees. Quote spells the escapes as Go does, for one value; Line
// spells them as JSON does, for a line of prose or of JSON, which stays
// JSON with the same values.
package termtext

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// shown reports whether r may be written as itself.
func shown(r rune) bool { return strconv.IsGraphic(r) }

// plain reports whether every rune of s is valid and shown (a tab too,
// when tab is set).
func plain[S string | []byte](s S, tab bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < ' ' && !(tab && c == '\t')) || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if (r == utf8.RuneError && n == 1) || !shown(r) {
			return false
		}
		i += n
	}
	return true
}

// Quote returns s for a terminal: s itself when every rune is shown, else
// s as a Go string literal by strconv.QuoteToGraphic's rules (`"a\x1b[2J"`,
// `"\u202e"`, `"\xff"`), whose quotes also mark the value as escaped.
func Quote(s string) string {
	if plain(s, false) {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

// Line returns s for a line of our own prose that embeds others' text (a
// log line, an error, a note, a line of a file shown in full): every rune
// not shown, except a tab, as a JSON escape (\n, \r, \u001b, \u202e; an
// invalid byte as \ufffd, as JSON encoders replace it), so that a JSON line
// stays JSON with the same values and any line stays one line.
func Line(s string) string {
	if plain(s, true) {
		return s
	}
	return string(appendLine(nil, s))
}

func appendLine(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	esc := func(r rune) {
		dst = append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case r == '\t' || (r != utf8.RuneError || n > 1) && shown(r):
			dst = append(dst, s[i:i+n]...)
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == utf8.RuneError:
			esc(utf8.RuneError)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			esc(hi)
			esc(lo)
		default:
			esc(r)
		}
		i += n
	}
	return dst
}

// Encoder wraps a zap encoder (JSON or console) so that every entry it
// writes passes through Line, the newline that ends it aside: zap's JSON
// encoder leaves C1 controls, separators and bidi runes raw, and its
// console encoder writes the message itself raw.
func Encoder(enc zapcore.Encoder) zapcore.Encoder { return lineEncoder{enc} }

type lineEncoder struct{ zapcore.Encoder }

func (e lineEncoder) Clone() zapcore.Encoder { return lineEncoder{e.Encoder.Clone()} }

func (e lineEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	buf, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return buf, err
	}
	b := buf.Bytes()
	body := b
	if n := len(b); n > 0 && b[n-1] == '\n' {
		body = b[:n-1]
	}
	if plain(body, true) {
		return buf, nil
	}
	out := appendLine(make([]byte, 0, len(b)+32), string(body))
	out = append(out, b[len(body):]...)
	buf.Reset()
	_, _ = buf.Write(out)
	return buf, nil
}
