package conformance

// Rows of Hermes' profiles (issue 26): files of a named profile's home
// judged with _command_line_belongs_to_profile, and the token locks of a
// lock dir that every profile shares, which a multiplexer takes for the
// profiles it serves under its own home's name.

const devWroteProfile = "stricter: its owner wrote the record itself (pid, start time and argv as recorded), so it stands whatever profile its argv names"

func profileRows() []Row {
	return []Row{
		// A named profile's home: a live gateway of another profile is not
		// this home's (the pid was reused). Where the record has a start
		// time, a reuse shows there first; the rule decides where it has
		// none.
		{ID: "N01", File: "pid-file", Layout: "profile home, no gateway.lock, start_time null, pid reused by `hermes -p coder gateway run`", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "-p", "coder", "gateway", "run"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "N02", File: "pid-file", Layout: "profile home, no gateway.lock, live `hermes -p work gateway run`", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "-p", "work", "gateway", "run"), e.Home, gatewayArgv)
			}},
		{ID: "N03", File: "pid-file", Layout: "profile home, no gateway.lock, live `hermes --profile=work gateway run` (newer Hermes' spelling)", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "--profile=work", "gateway", "run"), e.Home, gatewayArgv)
			}},
		{ID: "N04", File: "pid-file", Layout: "profile home, no gateway.lock, live `hermes HERMES_HOME=<this home> gateway run`", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "HERMES_HOME="+e.Home, "gateway", "run"), e.Home, gatewayArgv)
			}},
		{ID: "N05", File: "pid-file", Layout: "profile home, no gateway.lock, bare `hermes gateway run` (HERMES_HOME in its environment only), start_time null", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), e.Home, nullStart)
			}},
		{ID: "N06", File: "pid-file", Layout: "profile home, no gateway.lock, bare `hermes gateway run` that wrote its own record", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devWroteProfile,
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), e.Home, nil)
			}},
		{ID: "N07", File: "state", Layout: "profile home, gateway_state.json running, start_time null, pid reused by `hermes -p coder gateway run` (Hermes' start-up, unscoped, calls it running; see Q01)", Hermes: "live", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.StateFile(), e.Sleeper("hermes", "-p", "coder", "gateway", "run"), e.Home, both(gatewayArgv, nullStart, running))
			}},
		{ID: "N08", File: "state", Layout: "profile home, gateway_state.json running, live `hermes -p work gateway run`", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.StateFile(), e.Sleeper("hermes", "-p", "work", "gateway", "run"), e.Home, both(gatewayArgv, running))
			}},
		{ID: "N09", File: "pid-file", Layout: "root home, no gateway.lock, live `hermes -p coder gateway run`: the profile rule is for named profiles only", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				return e.record(e.PIDFile(), e.Sleeper("hermes", "-p", "coder", "gateway", "run"), e.Home, gatewayArgv)
			}},

		// The lock dir all profiles share: a multiplexer's token lock names
		// its own launch home and profile; judged from a named profile's
		// supervisor by its live process alone.
		{ID: "N10", File: "scoped-lock", Layout: "judged from profile work: the multiplexer's token lock, naming the root home and profile default, live root gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Other, both(gatewayArgv, profileDefault))
			}},
		{ID: "N11", File: "scoped-lock", Layout: "judged from profile work: a token lock of profile coder's live gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.Scoped(), e.Sleeper("hermes", "-p", "coder", "gateway", "run"), e.Other+"/profiles/coder", gatewayArgv)
			}},
		{ID: "N12", File: "scoped-lock", Layout: "judged from profile work: the multiplexer's token lock, naming the root home, its pid dead", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string {
				e.InProfile("work")
				return e.record(e.Scoped(), e.Dead("hermes", "gateway", "run"), e.Other, profileDefault)
			}},
	}
}

func running(r map[string]any)        { r["gateway_state"] = "running" }
func profileDefault(r map[string]any) { r["profile"] = "default" }
