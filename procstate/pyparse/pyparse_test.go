package pyparse

import (
	"math"
	"slices"
	"testing"
)

// The expected values below were produced by Python 3.11.7 (Unicode
// 14.0.0): int(s) for TestInt (ValueError: ok false), s.split() for
// TestSplit, and posixpath.expanduser(p) with HOME="/home/ann/" and a
// password database where root's home is /root for TestExpandUser.

func TestInt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{" 42 ", 42, true},
		{"+5", 5, true},
		{"-5", -5, true},
		{"1_000", 1000, true},
		{"1__0", 0, false},
		{"_1", 0, false},
		{"1_", 0, false},
		{"\u0661\u0662\u0663", 123, true},
		{"\u0968\u0966", 20, true},
		{"𝟏𝟐", 12, true},
		{"0x10", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
		{"  ", 0, false},
		{"+", 0, false},
		{"-_1", 0, false},
		{"007", 7, true},
		{"\u001c12\u001f", 0, false},
		{"\u00a09\u3000", 9, true},
		{"12\u0000", 0, false},
		{"1 2", 0, false},
		{"99999999999999999999", math.MaxInt64, true},
		{"\u0663_\u0664", 34, true},
		{"+-1", 0, false},
		{"\u20078", 8, true},
		{"\n-12\t", -12, true},
		// Unicode 16.0's digits, which Python 3.14 (current Hermes) reads
		// and Go's tables (15.0) do not know: Garay, Myanmar Extended-C's
		// second run of ten, Ol Onal (its zero is U+1E5F1) and the
		// outlined digits. Tolong Siki's are 17.0's: 3.14 raises.
		{"\U00010d41\U00010d42", 12, true},
		{"\U000116db\U000116da", 10, true},
		{"\U0001e5f2\U0001e5f1\U0001e5fa", 109, true},
		{"\U0001ccf7", 7, true},
		{"\U00011de1", 0, false},
	} {
		got, ok := Int(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Int(%q) = %d, %v; Python int() gives %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"a b", []string{"a", "b"}},
		{"a\u001cb\u001dc", []string{"a", "b", "c"}},
		{"a\u00a0b", []string{"a", "b"}},
		{" a\u2003b\u3000 ", []string{"a", "b"}},
		{"a\u0085b", []string{"a", "b"}},
		{"a\u200bb", []string{"a\u200bb"}},
		{"a\tb\nc\u000bd\fe\rf", []string{"a", "b", "c", "d", "e", "f"}},
	} {
		if got := Split(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q; Python str.split() gives %q", tt.in, got, tt.want)
		}
	}
}

func TestIsSpaceIsPythons(t *testing.T) {
	// [c for c in range(0x110000) if chr(c).isspace()], Python 3.11.7.
	want := []rune{0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
		0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000}
	var got []rune
	for r := rune(0); r < 0x110000; r++ {
		if IsSpace(r) {
			got = append(got, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("IsSpace holds for %U, Python's isspace for %U", got, want)
	}
}

func TestExpandUser(t *testing.T) {
	users := func(name string) (string, bool) {
		if name == "root" {
			return "/root", true
		}
		return "", false
	}
	for _, tt := range []struct{ in, want string }{
		{"~", "/home/ann"},
		{"~/x", "/home/ann/x"},
		{"~root/x", "/root/x"},
		{"~nosuchuser1/x", "~nosuchuser1/x"},
		{"a/~", "a/~"},
		{"~/", "/home/ann/"},
		{"/abs", "/abs"},
	} {
		if got := ExpandUser(tt.in, "/home/ann/", users); got != tt.want {
			t.Errorf("ExpandUser(%q) = %q; Python gives %q", tt.in, got, tt.want)
		}
	}
}
