package lockstore

import (
	"errors"
	"strings"
	"testing"
)

// TestReadNesting: a record nested deeper than maxNesting is one Hermes'
// reader may raise on (RecursionError), so it is read as such, never as
// garbage to move aside; one within the bound, and brackets inside
// strings however many, read as before.
func TestReadNesting(t *testing.T) {
	deep := func(n int) string { // the record counts one
		return `{"pid": 7, "metadata": ` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`
	}
	for _, tt := range []struct {
		name   string
		body   string
		raises bool
	}{
		{"at the bound", deep(maxNesting), false},
		{"one past it", deep(maxNesting + 1), true},
		{"past Go's own limit", deep(20000), true},
		{"brackets in a string", `{"pid": 7, "metadata": "` + strings.Repeat("[", 500) + `"}`, false},
		{"an escaped quote, then brackets in the string", `{"pid": 7, "m": "\"` + strings.Repeat("{", 500) + `"}`, false},
		{"cut short, deep", `{"pid": 7, "metadata": ` + strings.Repeat("[", 200), true},
		{"a bare list, deep", strings.Repeat("[", 200) + strings.Repeat("]", 200), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readJSONFile([]byte(tt.body), true)
			var ce *CorruptError
			got := errors.As(err, &ce) && ce.hermesRaises
			if got != tt.raises {
				t.Fatalf("hermesRaises=%v (%v), want %v", got, err, tt.raises)
			}
			if !tt.raises && strings.HasPrefix(tt.body, `{"pid": 7, "m`) && err != nil {
				t.Fatalf("a record within the bound does not read: %v", err)
			}
		})
	}
}
