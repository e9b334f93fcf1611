package supervisor

// osGatewayDefaults: Hermes' own Windows launchers set
// HERMES_GATEWAY_DETACHED=1, so that the gateway ignores console events
// (a closing console or a logoff) and stops on the planned-stop marker
// alone, as it does under them.
func osGatewayDefaults() []string { return []string{"HERMES_GATEWAY_DETACHED=1"} }
