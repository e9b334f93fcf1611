//go:build !windows

package supervisor

// osGatewayDefaults: POSIX gateways stop on SIGTERM and need nothing more.
func osGatewayDefaults() []string { return nil }
