package conformance

// Rows of an outside review against gateway/status.py @ 00067189: layouts
// where Hermes' own start-up, which asks get_running_pid() with no
// pid_path, keeps what its scoped readers (get_running_pid(pid_path),
// live_gateway_pid_for_home) would not adopt.
//
// _start_gateway_claim_pid_file calls get_running_pid() unscoped. There,
// neither _record_matches_live_gateway_pid nor
// get_runtime_status_running_pid is given expected_home, so
// _command_line_belongs_to_profile is never asked: a live run-or-restart
// gateway of another profile under a record of this home is running, and
// nothing is cleaned up. The scoped readers call it not this home's, but
// with gateway.lock held they remove nothing either (saw_live_pid).

func unscopedRows() []Row {
	other := func(e *Env) *Proc { return e.Sleeper("hermes", "-p", "coder", "gateway", "run") }
	return []Row{
		{ID: "Q01", File: "pid-file", Layout: "profile home, gateway.lock held, start_time null, pid reused by `hermes -p coder gateway run`", Hermes: "live", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				e.HoldLock(e.RuntimeLock())
				return e.record(e.PIDFile(), other(e), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "Q02", File: "pid-file", Layout: "profile home, gateway.lock free, dead pid; gateway_state.json running, start_time null, pid reused by `hermes -p coder gateway run`", Hermes: "live", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				e.FreeLock()
				e.record(e.StateFile(), other(e), e.Home, both(gatewayArgv, nullStart, running))
				return e.record(e.PIDFile(), e.Dead("hermes", "gateway", "run"), e.Home, nil)
			}},
		// _same_hermes_home resolves a relative hermes_home against the
		// working directory of the Hermes process reading it, which is not
		// known here: it may be this home.
		{ID: "Q03", File: "pid-file", Layout: "gateway.lock held, live `hermes gateway run`, hermes_home relative (`home`)", Hermes: "live", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.HoldLock(e.RuntimeLock())
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), "home", gatewayArgv)
			}},
	}
}
