package lockstore

// procRowFacts are the facts of the rows of /proc as Hermes reads it
// (issue 25, class 4): live processes whose names Hermes' text reads of
// /proc raise on (NameNotUTF8, with the epoch start time Hermes records
// for them) or split otherwise (NaiveStartTime).
func procRowFacts() map[string]facts {
	epoch := ruleStart + 170_000_000_000 // psutil's create time, not the clock ticks
	badName := func(argv ...string) procFacts {
		p := alive(argv...)
		e := epoch
		p.live.EpochStartTime, p.live.NameNotUTF8 = &e, true
		return p
	}
	stopped := func(p procFacts) procFacts { p.live.Stopped = true; return p }
	gw := rec(pidGateway, argvGateway, ruleHome, "start_time", epoch)
	live := procs(pidGateway, badName(argvGateway...))
	bad := []string{"/opt/bin/herm\xffes", "gateway", "run"}
	cut := []string{"/opt/bin/python\u00e9\u00e9\u00e9\u00e9\u00e9", "-m", "hermes_cli.main", "gateway", "run"}
	sleeper := []string{"/opt/bin/sleeper"}
	naive := func() procFacts {
		p := alive(argvGateway...)
		zero := int64(0) // the kernel's 21st field, which str.split() makes the 22nd
		p.live.NaiveStartTime = &zero
		return p
	}
	return map[string]facts{
		"U01": {file: gw, procs: live},
		"U02": {file: gw, lock: lockHeld, lockRec: gw, procs: live},
		"U03": {file: gw, lock: lockFree, lockRec: gw, procs: live, state: rec(pidGateway, argvGateway, ruleHome, "start_time", epoch, "gateway_state", "running")},
		"U04": {file: rec(pidGateway, []string{"/opt/bin/herm\ufffdes", "gateway", "run"}, ruleHome, "start_time", nil), procs: procs(pidGateway, badName(bad...))},
		"U05": {file: rec(pidGateway, cut, ruleHome, "start_time", epoch), procs: procs(pidGateway, badName(cut...))},
		"U06": {file: gw, procs: procs(pidGateway, stopped(badName(argvGateway...)))},
		"U07": {file: rec(pidGateway, argvGateway, ruleHome), procs: procs(pidGateway, stopped(badName(argvGateway...)))},
		"U08": {file: gw, procs: procs(pidGateway, stopped(badName(sleeper...)))},
		"U09": {file: rec(pidGateway, argvGateway, ruleHome, "start_time", 0), procs: procs(pidGateway, naive())},
		"U10": {file: gw, lock: lockHeld, lockRec: gw, procs: procs(pidGateway, stopped(badName(argvGateway...)))},
	}
}
