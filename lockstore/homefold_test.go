package lockstore

import "testing"

// TestHomesFoldAsNormcase: where Python's os.path.normcase (str.lower()
// there; Python 3.11.7's ntpath fallback) calls two Windows homes one,
// so do we. Separators are canonical's business, not this one's.
func TestHomesFoldAsNormcase(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`C:\İx`, "C:\\i\u0307x", true},
		{`C:\İx`, "C:\\I\u0307X", true},
		{`C:\ΑΣ`, `C:\ας`, true},
		{`C:\Users\Ann`, `c:\users\ann`, true},
		// Python 3.14's str.lower() (Unicode 16.0) folds Garay capitals
		// and U+A7DA, which Go's tables (15.0) do not know.
		{"C:\\\U00010d50\ua7da", "C:\\\U00010d70\ua7db", true},
		{`C:\a`, `C:\b`, false},
	} {
		if got := homesFoldEqual(tt.a, tt.b); got != tt.same {
			t.Errorf("homesFoldEqual(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
