package supervisor

import (
	"slices"
	"testing"
)

// Every gateway gets the platform's defaults (Windows: detached, as
// Hermes' own launcher runs it), unless the config sets them.
func TestOSGatewayDefaults(t *testing.T) {
	env := childEnv(nil, nil)
	for _, kv := range osGatewayDefaults() {
		if !slices.Contains(env, kv) {
			t.Errorf("environment %q lacks %s", env, kv)
		}
		k := envKey(kv)
		own := childEnv(nil, []string{k + "=0"})
		if slices.Contains(own, kv) || !slices.Contains(own, k+"=0") {
			t.Errorf("the config's %s=0 did not win: %q", k, own)
		}
	}
}
