package supervisor

import (
	"slices"
	"strings"
)

// gatewayDefaults tell every gateway it is supervised: Hermes then exits
// 75 on a chat /restart instead of spawning a successor behind our back,
// and its own respawn-storm breaker, which would sleep up to 300 s while
// we report it running, stays off. The user's config env overrides them.
// The variable replaces the --external-supervisor flag, which a Hermes
// older than about v0.20.5 rejects; older versions ignore the variable.
var gatewayDefaults = []string{"HERMES_GATEWAY_EXTERNAL_SUPERVISOR=1", "HERMES_GATEWAY_MAX_STARTS=0"}

// serviceManagerVars address the supervisor, not the gateway: a gateway
// that saw them would send READY and watchdog pings in our name.
var serviceManagerVars = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}

// childEnv is the gateway's environment: ours without the service
// manager's variables, then the gateway defaults the config does not set,
// then the config's env, then extra.
func childEnv(ours, config []string, extra ...string) []string {
	env := make([]string, 0, len(ours)+len(gatewayDefaults)+1+len(config)+len(extra))
	for _, kv := range ours {
		if !slices.Contains(serviceManagerVars, envKey(kv)) {
			env = append(env, kv)
		}
	}
	for _, kv := range slices.Concat(gatewayDefaults, osGatewayDefaults()) {
		if !slices.ContainsFunc(config, func(c string) bool { return envKey(c) == envKey(kv) }) {
			env = append(env, kv)
		}
	}
	env = append(env, config...)
	return append(env, extra...)
}

func envKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}
