package lockstore

// unscopedFacts are the facts of the rows of an outside review
// (internal/testkit/conformance/rows_unscoped.go): layouts where Hermes'
// own start-up, get_running_pid() unscoped in gateway/status.py @
// 00067189, keeps what its scoped readers would not adopt.
func unscopedFacts() map[string]facts {
	coder := alive("/opt/bin/hermes", "-p", "coder", "gateway", "run")
	gwArgv := []string{"/usr/local/bin/hermes", "gateway", "run"}
	return map[string]facts{
		// _record_matches_live_gateway_pid without expected_home: a live
		// gateway, so get_running_pid() returns its pid.
		"Q01": {home: workHome, file: rec(pidGateway, gwArgv, workHome, "start_time", nil), lock: lockHeld,
			procs: procs(pidGateway, coder)},
		// get_runtime_status_running_pid() without expected_home returns
		// that pid before any cleanup.
		"Q02": {home: workHome, file: rec(pidGateway, gwArgv, workHome), lock: lockFree,
			state: rec(pidOther, gwArgv, workHome, "gateway_state", "running", "start_time", nil),
			procs: procs(pidGateway, deadProc, pidOther, coder)},
		// _same_hermes_home resolves "home" against the reader's working
		// directory.
		"Q03": {file: rec(pidGateway, gwArgv, "home"), lock: lockHeld, procs: procs(pidGateway, alive(argvGateway...))},
	}
}
