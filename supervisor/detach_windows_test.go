package supervisor

import (
	"slices"
	"testing"
)

// As under Hermes' own Windows launcher, the gateway runs detached.
func TestGatewayRunsDetached(t *testing.T) {
	if env := childEnv(nil, nil); !slices.Contains(env, "HERMES_GATEWAY_DETACHED=1") {
		t.Errorf("environment %q lacks HERMES_GATEWAY_DETACHED=1", env)
	}
}
