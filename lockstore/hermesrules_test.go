package lockstore

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// facts is what one conformance row implies, written down without
// building it: the judged file's bytes and age, gateway.lock's state and
// bytes, and what a look at each pid finds.
type facts struct {
	file    string
	age     time.Duration
	lock    lockState
	lockRec string
	procs   map[int]procFacts
	// state is gateway_state.json's bytes ("": none), for get_running_pid's
	// fallback; held says a process holds the judged file locked.
	state string
	held  bool
	// home is the home judged; ruleHome when empty.
	home string
}

const (
	ruleHome  = "/home/ann/.hermes"
	otherHome = "/home/bob/.hermes"
)

// The pids of the rows' processes, and the command lines they run.
const (
	pidGateway = 100 + iota // a real gateway, or one that only looks like one
	pidOther                // an unrelated process, or a second gateway
)

var (
	// ruleStart is a start time any OS reads as plausible (epoch
	// centiseconds now); on Linux only equality counts anyway.
	ruleStart   = time.Now().UnixMilli() / 10
	argvGateway = []string{"/opt/bin/hermes", "gateway", "run"}
	argvSleep   = []string{"/opt/bin/sleep", "100"}
)

func alive(argv ...string) procFacts {
	st := ruleStart
	return procFacts{live: procstate.Live{StartTime: &st, Argv: argv}}
}

func stoppedProc(argv ...string) procFacts {
	p := alive(argv...)
	p.live.Stopped = true
	return p
}

func zombieProc(argv ...string) procFacts {
	p := alive(argv...)
	p.live.Zombie = true
	return p
}

var deadProc = procFacts{err: fmt.Errorf("pid: %w", procstate.ErrNoProcess)}

// rec is a record as JSON; fields change or add keys (nil deletes one).
func rec(pid any, argv []string, home string, fields ...any) string {
	m := map[string]any{"pid": pid, "kind": GatewayKind, "argv": argv, "start_time": ruleStart, "hermes_home": home}
	for i := 0; i+1 < len(fields); i += 2 {
		k := fields[i].(string)
		if fields[i+1] == nil && k != "start_time" && k != "pid" {
			delete(m, k)
			continue
		}
		m[k] = fields[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func procs(kv ...any) map[int]procFacts {
	m := map[int]procFacts{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(int)] = kv[i+1].(procFacts)
	}
	return m
}

func marker(writtenAt string) string {
	b, _ := json.Marshal(map[string]any{"target_pid": pidGateway, "target_start_time": ruleStart, "stopper_pid": 777, "written_at": writtenAt})
	return string(b)
}

// rowFacts has the facts of every row of internal/testkit/conformance, by ID.
func rowFacts() map[string]facts {
	gw := rec(pidGateway, argvGateway, ruleHome)
	held := func(pidFile string) facts {
		return facts{file: pidFile, lock: lockHeld, lockRec: gw, procs: procs(pidGateway, alive(argvGateway...))}
	}
	free := func(file string, p procFacts) facts {
		return facts{file: file, lock: lockFree, procs: procs(pidGateway, p)}
	}
	noLock := func(file string, p procFacts) facts { return facts{file: file, procs: procs(pidGateway, p)} }
	scoped := func(file string, p procFacts) facts { return facts{file: file, procs: procs(pidGateway, p)} }
	gwArgv := []string{"/usr/local/bin/hermes", "gateway", "run"}
	hour := time.Hour
	bare := []string{"/opt/bin/hermes", "gateway"}
	restart := []string{"/opt/bin/hermes", "gateway", "restart"}
	gwpy := []string{"/usr/bin/python3", "gw.py", "gateway", "run"}
	now := time.Now().UTC()
	return merge(secondPassFacts(), procRowFacts(), profileFacts(), pythonRowFacts(), caseRowFacts(), unscopedFacts(), map[string]facts{
		"P01":  held(gw),
		"P02":  free(gw, deadProc),
		"P03":  free(rec(pidGateway, argvGateway, ruleHome, "start_time", nil), deadProc),
		"P04":  free(gw, zombieProc(argvGateway...)),
		"P05":  free(gw, stoppedProc(argvGateway...)),
		"P07":  free(rec(pidGateway, gwArgv, ruleHome), alive(argvSleep...)),
		"P08":  free(rec(pidGateway, gwArgv, ruleHome, "start_time", nil), alive(argvSleep...)),
		"P09":  free(rec(pidGateway, gwArgv, ruleHome, "start_time", ruleStart+1000), alive(argvSleep...)),
		"P10":  free(rec(pidGateway, argvGateway, ruleHome, "start_time", ruleStart-1000), alive(argvGateway...)),
		"P11":  noLock(gw, alive(argvGateway...)),
		"P11f": free(gw, alive(argvGateway...)),
		"P12":  noLock(rec(pidGateway, argvGateway, ruleHome, "start_time", nil), alive(argvGateway...)),
		"P12f": free(rec(pidGateway, argvGateway, ruleHome, "start_time", nil), alive(argvGateway...)),
		"P13":  free(strconv.Itoa(pidGateway)+"\n", alive(argvSleep...)),
		"P14":  held(strconv.Itoa(pidGateway) + "\n"),
		"P15":  free("\ufeff"+gw, deadProc),
		"P16":  held("\ufeff" + gw),
		"P17":  free("", deadProc),
		"P18":  {file: "", age: hour, lock: lockFree},
		"P19":  {file: "\x00\xff\x13garbage", age: hour, lock: lockFree},
		"P20":  free(rec(pidGateway, argvGateway, otherHome), alive(argvGateway...)),
		"P21":  func() facts { f := held(rec(strconv.Itoa(pidGateway), argvGateway, ruleHome)); f.age = hour; return f }(),
		"P22":  {file: rec(pidGateway, bare, ruleHome), lock: lockHeld, lockRec: rec(pidGateway, bare, ruleHome), procs: procs(pidGateway, alive(bare...))},

		"S01":  scoped(gw, alive(argvGateway...)),
		"S02":  scoped(gw, deadProc),
		"S03":  scoped(gw, zombieProc(argvGateway...)),
		"S04":  scoped(gw, stoppedProc(argvGateway...)),
		"S04m": scoped(gw, stoppedProc(argvGateway...)),
		"S05":  scoped(rec(pidGateway, gwArgv, ruleHome), alive(argvSleep...)),
		"S06":  scoped(rec(pidGateway, gwArgv, ruleHome, "start_time", nil), alive(argvSleep...)),
		"S07":  scoped(rec(pidGateway, gwArgv, ruleHome, "start_time", ruleStart+1000), alive(argvSleep...)),
		"S08":  scoped(rec(pidGateway, argvGateway, ruleHome, "start_time", ruleStart-1000), alive(argvGateway...)),
		"S09":  scoped(gw, alive(argvGateway...)),
		"S10":  scoped(rec(pidGateway, argvGateway, ruleHome, "start_time", nil), alive(argvGateway...)),
		"S11":  scoped(strconv.Itoa(pidGateway), alive(argvGateway...)),
		"S12":  scoped(strconv.Itoa(pidGateway), deadProc),
		"S13":  scoped("\ufeff"+gw, alive(argvGateway...)),
		"S14":  {file: ""},
		"S15":  {file: "", age: hour},
		"S16":  {file: "\x00\xff\x13garbage", age: hour},
		"S17":  scoped(rec(pidGateway, argvGateway, otherHome), alive(argvGateway...)),
		"S18":  scoped(rec(pidGateway, bare, ruleHome), alive(bare...)),
		"S19":  {file: rec(nil, argvGateway, ruleHome, "start_time", nil), age: hour},

		"G01": noLock(rec(pidGateway, argvGateway, ruleHome, "gateway_state", "running"), deadProc),
		"G02": noLock(rec(pidGateway, gwArgv, ruleHome, "gateway_state", "running"), alive(argvSleep...)),
		"L01": {file: gw, lock: lockFree, lockRec: gw, procs: procs(pidGateway, deadProc)},
		"M01": {file: marker(now.Format(markerTime)), procs: procs(pidGateway, deadProc)},
		"M02": {file: marker(now.Add(-5 * time.Minute).Format(markerTime)), procs: procs(pidGateway, alive(argvGateway...))},
		"M03": {file: marker(now.Format("2006-01-02T15:04:05Z")), procs: procs(pidGateway, alive(argvGateway...))},

		"O01":  noLock(gw, deadProc),
		"O02":  noLock(rec(pidGateway, bare, ruleHome, "hermes_home", nil), alive(bare...)),
		"O03":  noLock(rec(pidGateway, argvGateway, ruleHome, "hermes_home", nil), stoppedProc(argvGateway...)),
		"O04":  noLock(rec(pidGateway, []string{"/opt/bin/hermes", "-p", "work", "gateway"}, ruleHome, "start_time", nil, "hermes_home", nil), alive("/opt/bin/hermes", "-p", "work", "gateway")),
		"O05":  noLock(rec(pidGateway, argvGateway, otherHome), alive(argvGateway...)),
		"O06":  noLock(rec(pidGateway, gwArgv, ruleHome), alive("/opt/bin/hermes", "gateway", "-v")),
		"O07":  noLock(rec(pidGateway, argvGateway, ruleHome, "hermes_home", nil), zombieProc(argvGateway...)),
		"O08":  {file: ""},
		"O09":  free(rec(pidGateway, gwpy, ruleHome), alive(gwpy...)),
		"O10":  scoped(rec(pidGateway, gwpy, ruleHome), alive(gwpy...)),
		"O11":  scoped(rec(pidGateway, restart, ruleHome), alive(restart...)),
		"O12":  {file: rec(pidGateway, restart, ruleHome), lock: lockHeld, lockRec: rec(pidGateway, restart, ruleHome), procs: procs(pidGateway, alive(restart...))},
		"O13":  scoped(rec(pidGateway, gwArgv, ruleHome, "start_time", nil), alive("/opt/bin/hermes", "-p", "work", "gateway")),
		"O14":  scoped(rec(pidGateway, gwArgv, ruleHome, "start_time", nil), alive("/opt/bin/hermes", "gateway", "status")),
		"O15":  scoped(rec(pidGateway, argvGateway, ruleHome, "start_time", -5), alive(argvGateway...)),
		"O15l": scoped(rec(pidGateway, argvGateway, ruleHome, "start_time", -5), alive(argvGateway...)),
		"O16": func() facts {
			p := alive("/opt/bin/my hermes", "gateway", "run")
			naive := ruleStart + 7 // Hermes' whitespace split lands on another field
			p.live.NaiveStartTime = &naive
			return scoped(rec(pidGateway, gwArgv, ruleHome, "start_time", naive), p)
		}(),
		"O17": noLock(rec(pidGateway, argvGateway, ruleHome, "gateway_state", "running"), stoppedProc(argvGateway...)),
		"O18": noLock(rec(pidGateway, argvGateway, ruleHome, "gateway_state", "stopped"), deadProc),
		"O19": {file: rec(pidOther, argvGateway, ruleHome), lock: lockHeld, lockRec: gw, procs: procs(pidGateway, alive(argvGateway...), pidOther, deadProc)},
		"O20": {file: `{"target_pid": null, "written_at": "` + now.Format(markerTime) + `"}`},
		"O21": scoped(rec(pidGateway, argvGateway, ruleHome, "start_time", ruleStart+1_000_000_000), alive(argvGateway...)),
		"O22": scoped(rec(strconv.Itoa(pidGateway), argvGateway, ruleHome), alive(argvGateway...)),
		"O23": {file: "{}"},
		"O24": {file: rec(pidOther, argvGateway, otherHome), lock: lockHeld, procs: procs(pidOther, alive(argvGateway...))},
		"O25": {file: gw, lock: lockHeld, lockRec: gw, procs: procs(pidGateway, stoppedProc(argvGateway...))},
	})
}

// judgeFacts applies the rule for a row's kind of file to its facts.
func judgeFacts(kind string, f facts) decision {
	home := ruleHome
	if f.home != "" {
		home = f.home
	}
	r := &rules{home: home, now: time.Now(), procs: f.procs, expand: func(p string) (string, bool) {
		return pyparse.ExpandUser(p, "/home/ann", nil), true
	}}
	mtime := r.now.Add(-f.age)
	var lockRec *fileFacts
	if f.lock != lockNone {
		l := recordFacts([]byte(f.lockRec), r.now, true, nil)
		lockRec = &l
	}
	var state *fileFacts
	if f.state != "" {
		st := recordFacts([]byte(f.state), r.now, false, nil)
		state = &st
	}
	file := func(barePID bool) fileFacts {
		ff := recordFacts([]byte(f.file), mtime, barePID, nil)
		ff.held = f.held
		return ff
	}
	switch kind {
	case string(KindPIDFile):
		ff := file(true)
		_, holds := r.runtimeStatus(state)
		return keepHeld(ff, r.pidFile(ff, f.lock, lockRec, f.lock != lockHeld && holds))
	case string(KindRuntimeLock):
		return r.runtimeLockFile(*lockRec, f.lock == lockHeld)
	case string(KindScopedLock):
		ff := file(false)
		return keepHeld(ff, r.scopedLockFile(ff))
	case string(KindState):
		ff := file(false)
		return keepHeld(ff, r.stateFile(ff))
	case string(KindLeftover): // an old one, as the rows build
		return keepHeld(fileFacts{held: f.held}, decision{verdict: procstate.Dead, action: ActionSweep, reason: "left over"})
	case string(KindMarker):
		ff := fileFacts{data: []byte(f.file), mtime: mtime, held: f.held}
		return keepHeld(ff, r.markerFile(ff))
	}
	panic("no rule for " + kind)
}

// TestRulesOnConformanceRows applies the rules, without I/O, to the facts
// every conformance row implies: each row must give its verdict and
// dry-run action, and a row without facts fails, so a new row is tried
// here as well as through the Store and the CLI.
func TestRulesOnConformanceRows(t *testing.T) {
	all := rowFacts()
	for _, row := range conformance.Rows() {
		if _, ok := all[row.ID]; !ok {
			t.Errorf("row %s (%s) has no facts in rowFacts", row.ID, row.Layout)
		}
	}
	// Facts need no signals; an OS's own rules do.
	for _, row := range conformance.RowsHere("signals") {
		t.Run(row.ID, func(t *testing.T) {
			f := all[row.ID]
			d := judgeFacts(row.File, f)
			if d.verdict.String() != row.Verdict || string(d.action) != row.Action {
				t.Fatalf("%s (%s): %s/%s (%s), want %s/%s", row.ID, row.Layout, d.verdict, d.action, d.reason, row.Verdict, row.Action)
			}
		})
	}
	for id := range all {
		found := false
		for _, row := range conformance.Rows() {
			found = found || row.ID == id
		}
		if !found {
			t.Errorf("rowFacts has %s, which is no conformance row", id)
		}
	}
}

// TestRulesDoNoIO keeps the rule files pure: no package that reads files,
// probes processes or waits may be imported by them.
func TestRulesDoNoIO(t *testing.T) {
	banned := map[string]bool{"os": true, "io/fs": true, "syscall": true, "context": true, "os/exec": true,
		"github.com/shirou/gopsutil/v4/process": true}
	files, err := filepath.Glob("hermes*.go")
	if err != nil || len(files) < 3 {
		t.Fatalf("rule files: %v %v", files, err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); (banned[p] || strings.HasPrefix(p, "github.com/hermes-agent/hermes-supervisor/platform/")) && !strings.HasSuffix(name, "_test.go") {
				t.Errorf("%s imports %s: the rules take facts, store.go gathers them", name, p)
			}
		}
	}
}
