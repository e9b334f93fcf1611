package lockstore

import (
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// pythonRowFacts are the facts of the rows where Python reads, splits or
// resolves otherwise than Go (conformance's pythonRows).
func pythonRowFacts() map[string]facts {
	nested := func(r string, depth int) string {
		return strings.TrimSuffix(r, "}") + `,"metadata":` + conformance.Nested(depth) + "}"
	}
	nullStart := rec(pidGateway, argvGateway, ruleHome, "start_time", nil)
	gwArgv := []string{"/usr/local/bin/hermes", "gateway", "run"}
	blankHeld := func(argv []string) facts {
		return facts{file: rec(pidGateway, gwArgv, ruleHome), lock: lockHeld, procs: procs(pidGateway, alive(argv...))}
	}
	scopedNull := func(argv ...string) facts {
		return facts{file: rec(pidGateway, gwArgv, ruleHome, "start_time", nil), procs: procs(pidGateway, alive(argv...))}
	}
	return map[string]facts{
		"V01": {file: nested(nullStart, conformance.DeepNesting), age: time.Hour, procs: procs(pidGateway, deadProc)},
		"V02": {file: nested(nullStart, conformance.DeeperNesting), age: time.Hour, procs: procs(pidGateway, deadProc)},
		"V03": {file: rec(pidOther, argvGateway, ruleHome), lock: lockHeld, lockRec: nested(rec(pidGateway, argvGateway, ruleHome), conformance.DeepNesting),
			procs: procs(pidGateway, deadProc, pidOther, deadProc)},
		"V04": {file: rec(pidOther, argvGateway, ruleHome), lock: lockFree, state: nested(rec(pidGateway, argvGateway, ruleHome, "gateway_state", "running"), conformance.DeepNesting),
			procs: procs(pidGateway, deadProc, pidOther, deadProc)},
		"V05": blankHeld(conformance.BlankArgvs[0]),
		"V06": blankHeld(conformance.BlankArgvs[1]),
		"V07": scopedNull(" "),
		"V08": scopedNull("hermes\x1cgateway\x1crun", "'x"),
		"V09": scopedNull("\x1chermes", "gateway", "run\x1f"),
		// No link here: the facts take no I/O, so the home reaches itself
		// through a directory that does not exist, which Python's resolve()
		// and the rules both cut away.
		"V10": {file: rec(pidGateway, argvGateway, "/home/ann/no-such-dir/../.hermes"), lock: lockHeld, procs: procs(pidGateway, alive(argvGateway...))},
	}
}
