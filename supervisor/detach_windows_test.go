package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// As under Hermes' own Windows launcher, the gateway runs detached.
func TestGatewayRunsDetached(t *testing.T) {
	if env := childEnv(nil, nil); !slices.Contains(env, "HERMES_GATEWAY_DETACHED=1") {
		t.Errorf("environment %q lacks HERMES_GATEWAY_DETACHED=1", env)
	}
}

// The gateway starts as Hermes' own Windows launchers start it: in its
// home (the service manager would leave it in System32), with
// PYTHONIOENCODING=utf-8 whatever ours is.
func TestGatewayStartDirAndEncoding(t *testing.T) {
	file := filepath.Join(testdir.New(t), "started")
	t.Setenv("PYTHONIOENCODING", "cp1252")
	h := startHarnessWith(t, func(c *Config) {
		c.Command = []string{os.Args[0], "record-start", file, os.Args[0], demogateway.Command}
	})
	h.waitReady()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	a, errA := os.Stat(got["dir"])
	w, errW := os.Stat(h.layout.Home)
	if errA != nil || errW != nil || !os.SameFile(a, w) {
		t.Errorf("the gateway started in %s, want its home %s", got["dir"], h.layout.Home)
	}
	if got["PYTHONIOENCODING"] != "utf-8" {
		t.Errorf("the gateway's PYTHONIOENCODING is %q, want utf-8", got["PYTHONIOENCODING"])
	}
}
