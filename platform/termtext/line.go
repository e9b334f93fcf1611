package termtext

import (
	"strconv"
	"unicode/utf8"

	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
)

// LineField is a line of output as a field that gives back its exact bytes:
//
//   - "line": the text itself, when it is valid UTF-8;
//   - "line_escaped": the text with each byte that is not valid UTF-8 as
//     \xNN and each backslash as \\ (Python's codecs.escape_decode, or
//     strconv.Unquote inside double quotes, gives the bytes back);
//   - "line_base85": the bytes in base85 (RFC 1924's alphabet, Python's
//     base64.b85encode/b85decode), 5 characters per 4 bytes, for output
//     that either text form would blow up (a JSON encoder writes a control
//     byte as 6, an escaped byte as 5).
//
// A text form is kept while it costs at most as much as base85 plus
// TextSlack, so that a line of text with a stray byte stays readable; costs
// are counted as the JSON encoder and termtext.Encoder write them. A line
// of n bytes thus costs at most 1.25n + TextSlack + 1 log bytes, plus its
// entry's own.
func LineField(p []byte) zapcore.Field {
	text, escaped, valid := textCosts(p)
	b85 := base85Len(len(p))
	switch {
	case valid && text <= b85+TextSlack:
		return logfield.ByteString("line", p)
	case !valid && escaped <= b85+TextSlack:
		return logfield.String("line_escaped", string(escapeInvalid(p)))
	}
	return logfield.String("line_base85", string(base85(p)))
}

// TextSlack is how many log bytes more than base85 a line may cost to stay
// text: about two escaped bytes.
const TextSlack = 10

// textCosts returns how many bytes p takes in a JSON log line as text and
// in its escaped form, and whether it is valid UTF-8 at all.
func textCosts(p []byte) (text, escaped int, valid bool) {
	valid = true
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			n := 1
			switch {
			case c == '"', c == '\t', c == '\r':
				n = 2
			case c == '\\':
				text, escaped = text+2, escaped+4
				i++
				continue
			case c < ' ', c == 0x7f:
				n = 6
			}
			text, escaped = text+n, escaped+n
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		n := size
		switch {
		case r == utf8.RuneError && size == 1:
			valid = false
			escaped += 5 // `\\xff` once JSON has escaped its backslash
			i++
			continue
		case !strconv.IsGraphic(r) && r > 0xffff:
			n = 12 // a surrogate pair of \u escapes
		case !strconv.IsGraphic(r):
			n = 6
		}
		text, escaped = text+n, escaped+n
		i += size
	}
	return text, escaped, valid
}

// escapeInvalid writes each byte of p that is not valid UTF-8 as \xNN and
// each backslash as \\, leaving the rest for the encoder to escape as it
// escapes any text.
func escapeInvalid(p []byte) []byte {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(p)+len(p)/8)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, '\\', 'x', hex[p[i]>>4], hex[p[i]&0xf])
		case r == '\\':
			out = append(out, '\\', '\\')
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return out
}

// Base85Alphabet is the alphabet of LineField's "line_base85": RFC 1924's, which Python's base64.b85encode and git use:
// no quote, backslash or apostrophe, so nothing in it is escaped again.
const Base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// base85Len is the length of base85(p) for len(p) == n.
func base85Len(n int) int {
	l := n / 4 * 5
	if r := n % 4; r > 0 {
		l += r + 1
	}
	return l
}

// base85 encodes p as Python's base64.b85encode(p) (unpadded): each 4
// bytes, big-endian, as 5 digits; a last group of k bytes as k+1.
func base85(p []byte) []byte {
	out := make([]byte, 0, base85Len(len(p)))
	for len(p) > 0 {
		var group [4]byte
		k := copy(group[:], p)
		p = p[k:]
		v := uint32(group[0])<<24 | uint32(group[1])<<16 | uint32(group[2])<<8 | uint32(group[3])
		var digits [5]byte
		for i := 4; i >= 0; i-- {
			digits[i] = Base85Alphabet[v%85]
			v /= 85
		}
		out = append(out, digits[:k+1]...)
	}
	return out
}
