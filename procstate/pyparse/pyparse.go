// Package pyparse parses text as the Python built-ins Hermes calls do:
// int() of a string, str.split(), str.strip() and str.lower(),
// os.path.expanduser and datetime.fromisoformat, as Python 3.14 (current
// Hermes) and 3.11 (older Hermes) run them; where the two differ, it
// takes the reading that keeps more (see unicode16.go). Where we mirror Hermes' judging, a value must be
// read as Python reads it: a pid Go's strconv rejects but int() accepts
// is still a pid to Hermes, and a field bytes.Fields does not split is
// another field to str.split().
package pyparse

import (
	"math"
	"strings"
)

// IsSpace reports whether Python's str.isspace() is true of r: the
// characters of bidirectional class WS, B or S and category Zs, which
// include \x1c-\x1f, \x85 and \xa0 (Unicode 14, Python 3.11's).
func IsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, ' ', 0x85, 0xa0,
		0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// Split is str.split() without arguments: the runs of non-space
// characters of s.
func Split(s string) []string { return strings.FieldsFunc(s, IsSpace) }

// Int parses s as int(s) does in base 10: surrounding whitespace, one
// sign, any Unicode decimal digits, and single underscores between
// digits. Its whitespace is C's isspace() in ASCII (so not \x1c-\x1f,
// which str.strip() removes) and str.isspace() beyond. ok is false where int() raises ValueError. A value beyond
// int64 saturates: no process has such a pid or start time either way.
func Int(s string) (v int64, ok bool) {
	s = strings.TrimFunc(s, intSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var u uint64
	over, prevDigit := false, false
	for _, r := range s {
		if r == '_' {
			if !prevDigit {
				return 0, false
			}
			prevDigit = false
			continue
		}
		d, isDigit := decimal(r)
		if !isDigit {
			return 0, false
		}
		prevDigit = true
		if u > (math.MaxUint64-uint64(d))/10 {
			over = true
			continue
		}
		u = u*10 + uint64(d)
	}
	if !prevDigit {
		return 0, false // a trailing underscore
	}
	switch {
	case neg && (over || u > 1<<63):
		return math.MinInt64, true
	case neg:
		return -int64(u), true
	case over || u > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(u), true
}

func intSpace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return IsSpace(r)
}

// decimal is the value of a Unicode decimal digit (category Nd). Unicode
// encodes each script's digits as one run of ten, 0 to 9, so a digit's
// value is its distance from the start of its run of Nd characters,
// modulo ten (runs may abut, as the mathematical digits do).
func decimal(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !isNd(r) {
		return 0, false
	}
	n := 0
	for isNd(r - rune(n) - 1) {
		n++
	}
	return n % 10, true
}

// ExpandUser is POSIX os.path.expanduser: a leading "~" becomes home
// (without trailing slashes), and "~name" becomes user(name)'s home when
// user knows it; anything else is returned unchanged.
func ExpandUser(path, home string, user func(name string) (string, bool)) string {
	if !strings.HasPrefix(path, "~") {
		return path
	}
	i := strings.IndexByte(path, '/')
	if i < 0 {
		i = len(path)
	}
	dir := home
	if i > 1 {
		d, ok := "", false
		if user != nil {
			d, ok = user(path[1:i])
		}
		if !ok {
			return path
		}
		dir = d
	}
	out := strings.TrimRight(dir, "/") + path[i:]
	if out == "" {
		return "/"
	}
	return out
}
