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
	"platform/safefs":   0,
	"platform/signals":  0,
	"platform/alarm":    0,
	"platform/journald": 1,
	"platform/logqueue": 0,
	"platform/passwd":   0,
	"platform/proctree": 1,
	"platform/logfile":  1,
	"platform/ctlsock":  1,
	"platform/sdnotify": 1,
	// What makes untrusted text printable, below even platform's
	// journal writer.
	"platform/termtext": -1,
	// Log fields without zap itself, below everything that logs.
	"platform/logfield":              -2,
	"internal/testkit/pidns":         0,
	"internal/testsuite/layers":      0,
	"procstate/pyparse":              0,
	"procstate":                      2,
	"lockstore":                      3,
	"internal/demogateway":           4,
	"supervisor":                     4,
	"cmd/hermes-supervisor":          5,
	"cmd/hermes-demo-gateway":        5,
	"internal/testsuite/e2e":         6,
	"internal/tools/bench":           6,
	"internal/tools/bench/child":     0,
	"internal/testsuite/chaos":       6,
	"internal/testsuite/systemdtest": 6,
	"platform/service":               2,
	"internal/testkit/testdir":       0,
	"internal/testkit/sweepbin":      0,
	"internal/testkit/syncbuf":       0,
	"internal/testkit/silentsock":    0,
	"internal/testkit/fullpipe":      0,
	"internal/testkit/cgrouptest":    0,
	"internal/testkit/asroot":        0,
	// Test support that lays out files with real processes; it reads
	// processes and locks only, never lockstore.
	"internal/testkit/conformance": 3,
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
					if imp == "os/user" && name != "platform/passwd" {
						// Built without cgo, as releases are, os/user
						// reads /etc/passwd alone on Linux.
						t.Errorf("%s imports os/user: look accounts up through platform/passwd, which asks NSS", name)
					}
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

// TestDemoGatewayLinksNoHTTP keeps zap, and the net/http it links, out of
// the demo gateway (see platform/logfield), and gopsutil too on Linux
// (procstate/procfs_linux.go): it starts on every restart, and their
// set-up cost 0.28 and 0.2 ms of each start.
func TestDemoGatewayLinksNoHTTP(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", module+"/cmd/hermes-demo-gateway")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 20 {
			t.Fatalf("GOOS=%s: go list gave only %d packages", goos, len(deps))
		}
		for _, p := range deps {
			// On Linux procstate reads /proc itself (procfs_linux.go).
			gopsutil := goos == "linux" && strings.HasPrefix(p, "github.com/shirou/gopsutil/")
			if p == "net/http" || p == "go.uber.org/zap" || gopsutil {
				t.Errorf("GOOS=%s: the demo gateway links %s", goos, p)
			}
		}
	}
}
