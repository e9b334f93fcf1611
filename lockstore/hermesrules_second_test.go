package lockstore

import (
	"maps"
	"strings"
	"time"
)

func merge(ms ...map[string]facts) map[string]facts {
	out := map[string]facts{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// secondPassFacts are the facts of the second pass's rows (issue 25).
func secondPassFacts() map[string]facts {
	gw := rec(pidGateway, argvGateway, ruleHome)
	running := func(st any) string { return rec(pidGateway, argvGateway, ruleHome, "gateway_state", st) }
	live := procs(pidGateway, alive(argvGateway...))
	hour := time.Hour
	big := strings.Repeat("a", 200<<10)
	bigArgv := []string{"/opt/bin/hermes", "gateway", "run", big}
	pyPID := " +1_00 " // pidGateway as only int() reads it
	return map[string]facts{
		"R01": {file: gw, lock: lockFree, lockRec: gw, procs: live, state: running("running")},
		"R02": {file: gw, lock: lockFree, lockRec: gw, procs: live, state: running("stopped")},
		"R03": {file: "\x00garbage", age: hour, lock: lockFree, procs: live, state: running("draining")},
		"R04": {file: rec(pidOther, argvGateway, ruleHome), procs: procs(pidGateway, alive(argvGateway...), pidOther, deadProc), state: running("starting")},
		"R05": {file: rec(pidGateway, argvGateway, otherHome), lock: lockFree, procs: live, state: rec(pidGateway, argvGateway, otherHome, "gateway_state", "running")},
		"R06": {file: gw, lock: lockFree, procs: live, state: running(7)},

		"H01": {file: "\x00garbage", age: hour, held: true},
		"H02": {file: gw, procs: procs(pidGateway, deadProc), held: true},
		"H03": {held: true},
		"H04": {file: gw, lock: lockFree, procs: procs(pidGateway, deadProc), held: true},

		"Y01": {file: rec(pyPID, argvGateway, ruleHome), procs: live},
		"Y02": {file: rec(pyPID, argvGateway, ruleHome), lock: lockHeld, lockRec: gw, procs: live},
		"Y03": {file: "+1_00\n", lock: lockHeld, lockRec: gw, procs: live},
		"Y04": {file: rec(0, argvGateway, ruleHome, "start_time", nil), age: hour, procs: procs(0, deadProc)},
		"Y05": {file: `{"pid": 1e400, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": null}`, age: hour},
		"Y06": {file: "{\"target_pid\": \xff}", age: hour},
		"Y07": {file: "{}", age: hour},
		"Y08": {file: `{"target_pid": 0, "written_at": "` + time.Now().UTC().Format(markerTime) + `"}`},
		"Y09": {file: rec(pidGateway, argvGateway, "~/.hermes"), procs: live},

		"Y10": {file: marker(time.Now().UTC().Format("2006-01-02T15:04:05.000000+0000"))},
		"Y11": {file: marker(time.Now().UTC().Format("2006-01-02 15:04:05+00"))},
		"Y12": {file: marker(time.Now().UTC().Format("20060102T150405Z"))},
		"Y13": {file: marker(time.Now().UTC().Format("2006-01-02T15:04:05"))},

		"Z01": {file: rec(pidGateway, bigArgv, ruleHome), age: hour, procs: procs(pidGateway, alive(bigArgv...))},
		"Z02": {file: rec(pidGateway, bigArgv, ruleHome), age: hour, procs: procs(pidGateway, deadProc)},
	}
}
