package conformance

// Rows where Python's str.lower() and str.split() read a command line
// otherwise than strings.ToLower and a substring test: full case mapping
// ('İ' lowers to "i" and a combining dot, 'Σ' to 'ς' at a word's end),
// and _command_line_belongs_to_profile taking the profile flag's value as
// the next token of str.split(), whatever white space lies between.

import (
	"os"
	"path/filepath"
)

// inRoot makes the layout's home the profile work of a root named root,
// as InProfile does with a root of that name.
func (e *Env) inRoot(root string) {
	e.T.Helper()
	base := filepath.Join(filepath.Dir(e.Home), root)
	e.Home, e.Other = filepath.Join(base, "profiles", "work"), base
	if err := os.MkdirAll(e.Home, 0o700); err != nil {
		e.T.Fatal(err)
	}
}

func caseRows() []Row {
	// Each live command line ends in --replace, as the argv the records
	// carry (GatewayArgv) does not: no process here wrote its record
	// itself (the stricter rule would keep it whatever its argv says).
	//
	// "--PROFİLE" lowers to "--profi\u0307le", no profile flag to Hermes,
	// so "gateway" after it is the gateway subcommand's.
	dotted := func(e *Env) *Proc { return e.Sleeper("hermes", "--PROFİLE", "gateway", "run", "--replace") }
	heldPIDFile := func(e *Env, p *Proc) string {
		e.HoldLock(e.RuntimeLock())
		return e.record(e.PIDFile(), p, e.Home, gatewayArgv)
	}
	// homeSpelled is a profile home whose root is named root, and a
	// live gateway whose argv names it as HERMES_HOME=<base>/<spelled>/...
	homeSpelled := func(root, spelled string) func(e *Env) string {
		return func(e *Env) string {
			e.inRoot(root)
			base := filepath.Dir(e.Other)
			return heldPIDFile(e, e.Sleeper("hermes", "HERMES_HOME="+filepath.Join(base, spelled, "profiles", "work"), "gateway", "run", "--replace"))
		}
	}
	return []Row{
		{ID: "W01", File: "pid-file", Layout: "gateway.lock held, gateway record (exact start_time) naming a live `hermes --PROFİLE gateway run --replace` (Python lowers İ to i and a combining dot: no profile flag, so a gateway run)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { return heldPIDFile(e, dotted(e)) }},
		{ID: "W02", File: "scoped-lock", Layout: "gateway record, exact start_time, live `hermes --PROFİLE gateway run --replace`", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), dotted(e), e.Home, gatewayArgv)
			}},
		{ID: "W03", File: "pid-file", Layout: "profile home work, gateway.lock held, live argv [\"hermes\", \"--profile\\twork\", \"gateway\", \"run\", \"--replace\"] (str.split() reads profile work)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.InProfile("work")
				// str.split() splits "--profile\twork" in two: profile work.
				return heldPIDFile(e, e.Sleeper("hermes", "--profile\twork", "gateway", "run", "--replace"))
			}},
		{ID: "W04", File: "pid-file", Layout: "profile home <b>/ΑΣ/profiles/work, gateway.lock held, live `hermes HERMES_HOME=<b>/ας/profiles/work gateway run --replace` (Python lowers the home's final Σ to ς)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: homeSpelled("ΑΣ", "ας")},
		{ID: "W05", File: "pid-file", Layout: "profile home <b>/İx/profiles/work, gateway.lock held, live `hermes HERMES_HOME=<b>/i\\u0307x/profiles/work gateway run --replace` (Python lowers İ to i and U+0307)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: homeSpelled("İx", "i\u0307x")},
	}
}
