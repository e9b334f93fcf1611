//go:build unix

package lockstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// TestHomesAskOncePerName floods one judgement with records naming "~name"
// homes: each name reaches the account database once however many records
// name it, at most maxHomeLookups names are asked, and past that a home is
// left unexpanded, which homeMatches takes as a match (kept).
func TestHomesAskOncePerName(t *testing.T) {
	t.Setenv("HOME", "/home/me")
	var mu sync.Mutex
	asked := map[string]int{}
	h := newHomes(context.Background())
	h.lookup = func(_ context.Context, name string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[name]++
		if name == "ghost" {
			return "", errors.New("unknown user ghost")
		}
		return "/home/" + name, nil
	}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if got, ok := h.expand("~alice/.hermes"); !ok || got != "/home/alice/.hermes" {
					t.Errorf("~alice/.hermes = %q, %v", got, ok)
				}
				if got, ok := h.expand("~ghost/.hermes"); !ok || got != "~ghost/.hermes" {
					t.Errorf("~ghost/.hermes = %q, %v; Python leaves an unknown user's ~ alone", got, ok)
				}
				if got, ok := h.expand("~/.hermes"); !ok || got != "/home/me/.hermes" {
					t.Errorf("~/.hermes = %q, %v", got, ok)
				}
			}
		}()
	}
	wg.Wait()
	if asked["alice"] != 1 || asked["ghost"] != 1 || len(asked) != 2 {
		t.Errorf("asked %v, want alice and ghost once each ($HOME is set: not the current user)", asked)
	}
	for i := 0; len(asked) < maxHomeLookups; i++ {
		h.expand(fmt.Sprintf("~user%d/.hermes", i))
	}
	before := len(asked)
	got, ok := h.expand("~oneTooMany/.hermes")
	if ok || got != "~oneTooMany/.hermes" || len(asked) != before {
		t.Errorf("past the bound: %q, %v, %d names asked (was %d); want it unexpanded, not ok, nobody asked", got, ok, len(asked), before)
	}
	if got, ok := h.expand("~alice/.hermes"); !ok || got != "/home/alice/.hermes" {
		t.Errorf("a name asked before the bound: %q, %v", got, ok)
	}
	r := &rules{home: filepath.FromSlash("/home/me/.hermes"), expand: h.expand}
	if m, _ := r.homeMatches(hermesRecord{Record: Record{HermesHome: "~oneTooMany/.hermes"}}); !m {
		t.Error("a home past the bound did not match: its record could be swept as another home's")
	}
}
