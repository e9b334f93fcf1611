package lockstore

// caseRowFacts are the facts of the rows where Python lowers or splits a
// command line otherwise than Go's standard library (conformance's
// caseRows).
func caseRowFacts() map[string]facts {
	gwArgv := []string{"/usr/local/bin/hermes", "gateway", "run"}
	dotted := []string{"/opt/bin/hermes", "--PROFİLE", "gateway", "run", "--replace"}
	held := func(home string, argv ...string) facts {
		return facts{home: home, file: rec(pidGateway, gwArgv, home), lock: lockHeld, procs: procs(pidGateway, alive(argv...))}
	}
	spelled := func(root, spelled string) facts {
		return held("/t/"+root+"/profiles/work", "/opt/bin/hermes", "HERMES_HOME=/t/"+spelled+"/profiles/work", "gateway", "run", "--replace")
	}
	return map[string]facts{
		"W01": held(ruleHome, dotted...),
		"W02": {file: rec(pidGateway, gwArgv, ruleHome), procs: procs(pidGateway, alive(dotted...))},
		"W03": held(workHome, "/opt/bin/hermes", "--profile\twork", "gateway", "run", "--replace"),
		"W04": spelled("ΑΣ", "ας"),
		"W05": spelled("İx", "i\u0307x"),
	}
}
