//go:build !windows

package supervisor

// osGatewayDefaults: POSIX gateways stop on SIGTERM and need nothing more.
func osGatewayDefaults() []string { return nil }

// gatewayDir is empty: the gateway keeps the working directory the service
// manager gave us (its unit's or plist's).
func gatewayDir(string) string { return "" }
