package pyparse

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Strip is str.strip() without arguments: s without the leading and
// trailing characters str.isspace() is true of (IsSpace), which include
// \x1c-\x1f where strings.TrimSpace stops.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Lower is str.lower(): full case mapping, where strings.ToLower maps one
// character to one, with the capitals of Unicode 16.0 (Python 3.14's; see
// unicode16.go). Two characters differ from a one-to-one mapping:
// U+0130 'İ' lowers to "i" and U+0307, the combining dot, not to a plain
// "i"; and U+03A3 'Σ' lowers to the final 'ς' where it ends a word (the
// Final_Sigma context), else to 'σ'. Bytes that are not UTF-8 are kept as
// they are, as Python keeps the surrogates os.fsdecode makes of them.
func Lower(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteByte(s[i])
		case r < utf8.RuneSelf:
			b.WriteByte(byte(unicode.ToLower(r)))
		case r == 'İ':
			b.WriteString("i\u0307")
		case r == 'Σ' && finalSigma(s, i, i+n):
			b.WriteRune('ς')
		default:
			b.WriteRune(toLower(r))
		}
		i += n
	}
	return b.String()
}

// finalSigma reports whether the sigma at s[at:next] is in Unicode's
// Final_Sigma context, as CPython tests it: a cased character before it
// and none after it, skipping case-ignorable characters either way.
func finalSigma(s string, at, next int) bool {
	before := false
	for j := at; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		if !caseIgnorable(r, n) {
			before = cased(r, n)
			break
		}
		j -= n
	}
	if !before {
		return false
	}
	for j := next; j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		if !caseIgnorable(r, n) {
			return !cased(r, n)
		}
		j += n
	}
	return true
}

// cased is Unicode's Cased property: Lowercase, Uppercase or Lt. A byte
// that is not UTF-8 is no letter (Python sees a surrogate, category Cs).
func cased(r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	return cased16(r) || unicode.In(r, unicode.Ll, unicode.Lu, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: categories Mn, Me,
// Cf, Lm and Sk, and the Word_Break classes MidLetter, MidNumLet and
// Single_Quote, listed here since Go has no Word_Break table.
func caseIgnorable(r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
