package procstate

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseStat holds the /proc/<pid>/stat parser to never panicking, and
// to taking field 22 after the last ')' whatever comm holds.
func FuzzParseStat(f *testing.F) {
	for _, seed := range []string{
		"4242 (hermes) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 881234 1000 10 18446744073709551615",
		"4242 (a) b) c) Z 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 881234 1000",
		"4242 (x", "", ")", "1 () T 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 1 0 -5 0",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStat(1, data)
		if err != nil {
			return
		}
		i := bytes.LastIndexByte(data, ')')
		fields := bytes.Fields(data[i+1:])
		want, _ := strconv.ParseInt(string(fields[19]), 10, 64)
		if st.start == nil || *st.start != want || want < 0 {
			t.Fatalf("parseStat(%q) start %v, want %d (non-negative)", data, st.start, want)
		}
	})
}
