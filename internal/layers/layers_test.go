package layers

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hermes-agent/hermes-supervisor"

// rank orders the packages: a package may import only packages of this
// module with a lower rank. internal/ test support sits at the bottom.
var rank = map[string]int{
	// What makes untrusted text printable, below even platform's
	// journal writer.
	"platform/termtext":     -1,
	"platform":              0,
	"internal/pidns":        0,
	"internal/layers":       0,
	"procstate/pyparse":     0,
	"procstate":             1,
	"lockstore":             2,
	"internal/demogateway":  3,
	"supervisor":            3,
	"cmd/hermes-supervisor": 4,
	"internal/e2e":          5,
	"internal/bench":        5,
	"internal/bench/child":  0,
	"internal/chaos":        5,
	"internal/systemdtest":  5,
	"platform/service":      1,
	"internal/testdir":      0,
	"internal/cgrouptest":   0,
	// Test support that lays out files with real processes; it reads
	// processes and locks only, never lockstore.
	"internal/conformance": 2,
}

func TestDependenciesPointOneWay(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
			cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			seen := 0
			for dec.More() {
				var p struct {
					ImportPath string
					Imports    []string
				}
				if err := dec.Decode(&p); err != nil {
					t.Fatal(err)
				}
				name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
				r, ok := rank[name]
				if !ok {
					t.Errorf("package %s has no place in the layering: add it to rank", name)
					continue
				}
				seen++
				for _, imp := range p.Imports {
					dep, inModule := strings.CutPrefix(imp, module+"/")
					if !inModule {
						continue
					}
					if dr, ok := rank[dep]; !ok || dr >= r {
						t.Errorf("%s (rank %d) imports %s (rank %d): dependencies must point down", name, r, dep, dr)
					}
				}
			}
			if seen < 5 {
				t.Fatalf("go list saw only %d packages", seen)
			}
		})
	}
}
