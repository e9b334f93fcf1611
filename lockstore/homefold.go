package lockstore

import (
	"strings"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// homesFoldEqual reports whether two Windows homes may be one to
// os.path.normcase: str.lower() (Python without _LCMapStringEx), or
// LCMapStringEx's lowercase. strings.EqualFold alone misses "İ" against
// "i\u0307", which str.lower() makes equal; folding every spelling of a
// dotted i into "i" first also covers a map to plain "i". It may call
// more homes one than Python does, which only keeps more records.
func homesFoldEqual(a, b string) bool {
	// The dotted capital I, and the i or I with a combining dot above that
	// str.lower() makes of it, spelled as one plain i.
	dottedI := strings.NewReplacer("İ", "i", "i\u0307", "i", "I\u0307", "i")
	// str.lower() itself too, as Python 3.14 has it: Unicode 16.0's
	// capitals, which Go's folding tables (15.0) lack.
	return strings.EqualFold(dottedI.Replace(a), dottedI.Replace(b)) || pyparse.Lower(a) == pyparse.Lower(b)
}
