package pyparse

import "unicode"

// Current Hermes requires Python 3.14 (its pyproject.toml:
// requires-python = ">=3.14,<3.15"), whose str and int() read text by
// Unicode 16.0.0; older Hermes ran on 3.11 (Unicode 14.0.0). Go's unicode
// package is 15.0.0, older than the one and newer than the other. Where
// Go is newer, reading as Go does accepts more pids and folds more
// letters, which only keeps more; where 3.14 is newer, Go alone would
// miss what Hermes reads: a pid written in Garay digits, or a home in
// Garay capitals matched against its lowercase. The tables below are
// what Unicode 16.0 added to the categories these readers use, listed
// from the Unicode 17 data of ICU 78 less what 17.0 added (Tolong Siki's
// digits, Beria Erfe's letters and three Latin pairs, whose Age is 17.0).

// nd16 is the decimal digits (category Nd) new in Unicode 16.0: Garay,
// Myanmar Extended-C (two runs of ten), Sunuwar, Gurung Khema, Kirat Rai,
// the outlined digits of Symbols for Legacy Computing Supplement, and
// Ol Onal. Each run of ten counts 0 to 9, as decimal expects.
var nd16 = &unicode.RangeTable{R32: []unicode.Range32{
	{Lo: 0x10d40, Hi: 0x10d49, Stride: 1},
	{Lo: 0x116d0, Hi: 0x116e3, Stride: 1},
	{Lo: 0x11bf0, Hi: 0x11bf9, Stride: 1},
	{Lo: 0x16130, Hi: 0x16139, Stride: 1},
	{Lo: 0x16d70, Hi: 0x16d79, Stride: 1},
	{Lo: 0x1ccf0, Hi: 0x1ccf9, Stride: 1},
	{Lo: 0x1e5f1, Hi: 0x1e5fa, Stride: 1},
}}

// isNd reports whether r is a decimal digit to Python 3.14 or to Go.
func isNd(r rune) bool { return unicode.Is(unicode.Nd, r) || unicode.Is(nd16, r) }

// lower16 is the lowercase of the capitals Unicode 16.0 added (one
// character each, as every one of them lowers): Cyrillic Tje, five Latin
// capitals, and Garay's 22 capitals, 0x20 above them.
func lower16(r rune) (rune, bool) {
	switch r {
	case 0x1c89:
		return 0x1c8a, true
	case 0xa7cb:
		return 0x0264, true
	case 0xa7cc:
		return 0xa7cd, true
	case 0xa7da:
		return 0xa7db, true
	case 0xa7dc:
		return 0x019b, true
	}
	if r >= 0x10d50 && r <= 0x10d65 {
		return r + 0x20, true
	}
	return 0, false
}

// toLower is unicode.ToLower with Unicode 16.0's capitals.
func toLower(r rune) rune {
	if l, ok := lower16(r); ok {
		return l
	}
	return unicode.ToLower(r)
}

// cased16 reports whether r is one of the letters of lower16, capital or
// small, which Unicode 16.0 made Cased (for the Final_Sigma context).
func cased16(r rune) bool {
	if _, ok := lower16(r); ok {
		return true
	}
	switch r {
	case 0x1c8a, 0xa7cd, 0xa7db:
		return true
	}
	return r >= 0x10d70 && r <= 0x10d85
}
