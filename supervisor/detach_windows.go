package supervisor

// osGatewayDefaults are what Hermes' own Windows launchers set:
// HERMES_GATEWAY_DETACHED=1, so that the gateway ignores console events
// (a closing console or a logoff) and stops on the planned-stop marker
// alone, as it does under them; and PYTHONIOENCODING=utf-8, since a
// service's output pipe would otherwise be encoded in the ANSI code page
// and the gateway's first non-ASCII line would fail to print.
func osGatewayDefaults() []string {
	return []string{"HERMES_GATEWAY_DETACHED=1", "PYTHONIOENCODING=utf-8"}
}

// gatewayDir is the gateway's working directory: its home, as Hermes'
// launchers pin it (cd /d <home>). The service manager starts us in
// System32, where no gateway belongs.
func gatewayDir(home string) string { return home }
