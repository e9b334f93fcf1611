package lockstore

// Python's limit on the integers json.loads reads, for the record reader
// (hermesread.go).

import "strings"

// maxIntDigits is the lowest int_max_str_digits Python takes (3.11 and
// later, sys.int_info.str_digits_check_threshold): json.loads makes an
// integer literal an int with int(), which raises ValueError past the
// limit. That is no JSONDecodeError, which is all Hermes' _read_json_file
// catches, so its caller raises and removes nothing. The default limit
// is 4300, but PYTHONINTMAXSTRDIGITS or -X int_max_str_digits lowers it
// as far as 640 for any Hermes process, whose environment we cannot
// know: a record with a longer integer is one some Hermes may raise on,
// and is kept. No record Hermes writes comes near either.
const maxIntDigits = 640

// longInteger reports whether text, outside its strings, holds an integer
// literal of more than maxIntDigits digits: a run of digits that is no
// fraction nor exponent, nor followed by one (those go through float(),
// which has no limit).
// Where text is no valid JSON it may find one Python never reaches, which
// only keeps more.
func longInteger(text []byte) bool {
	if len(text) <= maxIntDigits {
		return false // no room for so many digits: most records Hermes writes
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '"' {
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
			continue
		}
		if c < '0' || c > '9' {
			continue
		}
		start := i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		before := byte(' ')
		if j := start - 1; j >= 0 {
			before = text[j]
			if (before == '-' || before == '+') && j > 0 {
				before = text[j-1]
			}
		}
		if i-start > maxIntDigits && !strings.ContainsRune(".eE", rune(before)) && !floatAfter(text[i:]) {
			return true
		}
		i-- // the loop's i++ reads the byte after the run
	}
	return false
}

// floatAfter reports whether what follows a run of digits makes it a
// float's, as json's C scanner decides: a "." with a digit after it, or
// an e or E with digits after it (a sign between). A "." or e with none
// leaves the run an integer, which int() reads (and may raise on) before
// the decoder meets the stray character.
func floatAfter(rest []byte) bool {
	digitAt := func(i int) bool { return i < len(rest) && rest[i] >= '0' && rest[i] <= '9' }
	switch {
	case len(rest) == 0:
		return false
	case rest[0] == '.':
		return digitAt(1)
	case rest[0] == 'e' || rest[0] == 'E':
		if len(rest) > 1 && (rest[1] == '+' || rest[1] == '-') {
			return digitAt(2)
		}
		return digitAt(1)
	}
	return false
}
