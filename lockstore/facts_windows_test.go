package lockstore

import (
	"context"
	"testing"
)

// TestHomesLeaveTildeAlone: on Windows Python expands "~" from USERPROFILE
// and HOMEDRIVE, which this does not mirror, so a "~" home is never
// expanded and nobody is asked; its record is kept (homeMatches), never
// swept as another home's.
func TestHomesLeaveTildeAlone(t *testing.T) {
	asked := 0
	h := newHomes(context.Background())
	h.lookup = func(context.Context, string) (string, error) {
		asked++
		return `C:\Users\alice`, nil
	}
	for _, p := range []string{"~alice/.hermes", "~/.hermes", "~"} {
		if got, ok := h.expand(p); ok || got != p {
			t.Errorf("expand(%q) = %q, %v; want it unexpanded, not ok", p, got, ok)
		}
	}
	if asked != 0 {
		t.Errorf("the account database was asked %d times", asked)
	}
	r := &rules{home: `C:\Users\me\.hermes`, expand: h.expand}
	if m, _ := r.homeMatches(hermesRecord{Record: Record{HermesHome: "~alice/.hermes"}}); !m {
		t.Error("a ~ home did not match: its record could be swept as another home's")
	}
}
