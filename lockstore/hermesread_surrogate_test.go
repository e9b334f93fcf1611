package lockstore

import (
	"encoding/json"
	"testing"
)

// TestLoneSurrogate: which JSON strings hold a surrogate that Python's
// json.loads keeps alone in the str (Go's JSON makes it U+FFFD).
func TestLoneSurrogate(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want bool
	}{
		{`"/home/h\udce9"`, true}, // Python's escape of the byte \xe9
		{`"\ud800"`, true},
		{`"\ud800\u0041"`, true},
		{`"\ude00\ud83d"`, true},
		{`"\ud83d"`, true},
		{`"\ud83d\ude00"`, false}, // a pair: one character
		{`"\\udce9"`, false},      // an escaped backslash, then text
		{`"\u00e9\"\n"`, false},
		{`"/home/ann/.hermes"`, false},
		{`null`, false},
		{`7`, false},
	} {
		if got := loneSurrogate(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("loneSurrogate(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}
