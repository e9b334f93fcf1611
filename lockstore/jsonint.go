package lockstore

// Python's limit on the integers json.loads reads, for the record reader
// (hermesread.go).

import "strings"

// maxIntDigits is Python's default int_max_str_digits (3.11 and later):
// json.loads makes an integer literal an int with int(), which raises
// ValueError past it. That is no JSONDecodeError, which is all Hermes'
// _read_json_file catches, so its caller raises and removes nothing.
const maxIntDigits = 4300

// longInteger reports whether text, outside its strings, holds an integer
// literal of more than maxIntDigits digits: a run of digits that is no
// fraction nor exponent (those go through float(), which has no limit).
// Where text is no valid JSON it may find one Python never reaches, which
// only keeps more.
func longInteger(text []byte) bool {
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
		after := byte(' ')
		if i < len(text) {
			after = text[i]
		}
		if i-start > maxIntDigits && !strings.ContainsRune(".eE", rune(before)) && !strings.ContainsRune(".eE", rune(after)) {
			return true
		}
		i-- // the loop's i++ reads the byte after the run
	}
	return false
}
