package pyparse

import "testing"

// The expected values below were produced by Python 3.11.7 (Unicode
// 14.0.0): s.lower() for TestLower and s.strip() for TestStrip.

func TestLower(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"HERMES", "hermes"},
		{"--PROFİLE", "--profi\u0307le"},
		{"İ", "i\u0307"},
		{"ΑΣ", "ας"},
		{"ΑΣ/", "ας/"},
		{"/ΑΣb", "/ασb"},
		{"Σ", "σ"},
		{"ΑΣ'", "ας'"},
		{"ΑΣ'Β", "ασ'β"},
		{"Α.Σ", "α.ς"},
		{"ΑΣ\u0301", "ας\u0301"},
		{"ΑΣ\u0301Β", "ασ\u0301β"},
		{"1Σ", "1σ"},
		{"ΑΣ1", "ας1"},
		{"Ǆ", "ǆ"},
		{"ΑΣ ΑΣ", "ας ας"},
		{"\u212a", "k"},
		// Unicode 16.0's capitals, which Python 3.14 lowers and Go's
		// tables (15.0) do not; U+A7CE is 17.0's, which 3.14 keeps. A
		// Garay letter is cased, so a sigma after one ends a word.
		{"\ua7da\ua7cb\ua7dc\u1c89", "\ua7db\u0264\u019b\u1c8a"},
		{"/srv/\U00010d50\U00010d65", "/srv/\U00010d70\U00010d85"},
		{"\ua7ce", "\ua7ce"},
		{"\U00010d70Σ", "\U00010d70ς"},
		// Not UTF-8: kept byte for byte, and no letter to a sigma.
		{"A\xffΣ", "a\xffσ"},
	} {
		if got := Lower(tt.in); got != tt.want {
			t.Errorf("Lower(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStrip(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"\x1c/home/ann\x1f", "/home/ann"},
		{" \t/x\u3000", "/x"},
		{"\u0085a\u00a0", "a"},
		{"", ""},
		{"\x1c\x1d\x1e\x1f", ""},
		{"a b", "a b"},
	} {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
