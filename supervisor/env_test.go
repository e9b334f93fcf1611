package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestEnvHelper is not a test: run as a child with ENV_HELPER_OUT set, it
// writes its environment there.
func TestEnvHelper(t *testing.T) {
	if out := os.Getenv("ENV_HELPER_OUT"); out != "" {
		_ = os.WriteFile(out, []byte(strings.Join(os.Environ(), "\n")), 0o644)
	}
}

func TestChildEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		config []string
		want   []string // KEY=VALUE that must be there
		absent []string // KEYs that must not
	}{
		{"defaults", nil,
			[]string{"HERMES_GATEWAY_EXTERNAL_SUPERVISOR=1", "HERMES_GATEWAY_MAX_STARTS=0", "KEPT=yes"},
			[]string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}},
		{"config overrides", []string{"HERMES_GATEWAY_MAX_STARTS=5", "HERMES_GATEWAY_EXTERNAL_SUPERVISOR=0"},
			[]string{"HERMES_GATEWAY_EXTERNAL_SUPERVISOR=0", "HERMES_GATEWAY_MAX_STARTS=5"},
			[]string{"NOTIFY_SOCKET"}},
	}
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", "1")
	t.Setenv("KEPT", "yes")
	self, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Self(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(testdir.New(t), "env")
			cfg := &Config{Command: []string{os.Args[0], "-test.run=^TestEnvHelper$"},
				Env: append(slices.Clone(tt.config), "ENV_HELPER_OUT="+out)}
			st, err := startChild(cfg, self, zaptest.NewLogger(t), SystemClock{})
			if err != nil {
				t.Fatal(err)
			}
			st.begin()
			if e := st.wait(context.Background()); e.Code != 0 {
				t.Fatalf("helper exited %v", e)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, kv := range strings.Split(string(b), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			for _, kv := range tt.want {
				k, v, _ := strings.Cut(kv, "=")
				if got, ok := env[k]; !ok || got != v {
					t.Errorf("%s=%q in the gateway's environment, want %q", k, got, v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := env[k]; ok {
					t.Errorf("the gateway sees %s=%s", k, v)
				}
			}
			if env[EnvSupervisor] != supervisorTag(self) {
				t.Errorf("%s=%q", EnvSupervisor, env[EnvSupervisor])
			}
		})
	}
}
