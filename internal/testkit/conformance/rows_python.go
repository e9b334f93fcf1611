package conformance

// Rows where Python reads, splits or resolves otherwise than Go's
// standard library (review 2): JSON nested deeper than Python's json.loads
// recurses, command lines that Hermes' /proc read strips to nothing or
// str.split() splits at characters strings.Fields keeps, and a
// hermes_home whose ".." follows a symbolic link.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DeepNesting is how deep the rows' deeply nested records nest: past
// Python 3.11's recursion limit (1000), and under Go's encoding/json
// limit (10000), which DeeperNesting passes as well.
const (
	DeepNesting   = 1500
	DeeperNesting = 20000
)

// Nested is a JSON value depth arrays deep.
func Nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// nestedRecord is r as JSON with its metadata depth arrays deep, written
// by hand: json.Marshal refuses to nest deeper than Go's limit.
func nestedRecord(r map[string]any, depth int) string {
	r["metadata"] = "@nested@"
	b, _ := json.Marshal(r)
	return strings.Replace(string(b), `"@nested@"`, Nested(depth), 1)
}

// exact starts a process that only blocks, whose argv is exactly argv,
// argv[0] included, and waits until it is ready.
func (e *Env) exact(argv ...string) *Proc {
	e.T.Helper()
	path, err := e.bin.Path("hermes")
	if err != nil {
		e.T.Fatal(err)
	}
	p := e.launch(&exec.Cmd{Path: path, Args: argv}, "sleep")
	if line, err := readLine(p.out); err != nil || line != "ready" {
		e.T.Fatalf("helper %q: %q %v", argv, line, err)
	}
	return p
}

// BlankArgvs are command lines Hermes' read of /proc/<pid>/cmdline (NULs
// to spaces, decoded dropping what is not UTF-8, str.strip()) makes "".
var BlankArgvs = [][]string{{" "}, {"\xff\x1c", "\u3000"}}

func pythonRows() []Row {
	deadScoped := func(depth int) func(e *Env) string {
		return func(e *Env) string {
			r := e.Record(e.Dead("hermes", "gateway", "run"), e.Home)
			r["start_time"] = nil
			return e.aged(e.Write(e.Scoped(), nestedRecord(r, depth)))
		}
	}
	blankPIDFile := func(argv []string) func(e *Env) string {
		return func(e *Env) string {
			e.HoldLock(e.RuntimeLock())
			return e.record(e.PIDFile(), e.exact(argv...), e.Home, gatewayArgv)
		}
	}
	return []Row{
		// json.loads raises RecursionError, which _read_json_file does not
		// catch: Hermes removes nothing.
		{ID: "V01", File: "scoped-lock", Layout: "dead pid, start_time null, metadata nested 1500 deep (json.loads raises RecursionError), an hour old", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: deadScoped(DeepNesting)},
		{ID: "V02", File: "scoped-lock", Layout: "V01 nested 20000 deep (past Go's encoding/json limit too)", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: deadScoped(DeeperNesting)},
		{ID: "V03", File: "pid-file", Layout: "gateway.lock held, its record nested 1500 deep; gateway.pid naming a dead pid", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.Write(e.RuntimeLock(), nestedRecord(e.Record(e.Dead("hermes", "gateway", "run"), e.Home), DeepNesting))
				e.HoldLock(e.RuntimeLock())
				return e.record(e.PIDFile(), e.Dead("hermes", "gateway", "run"), e.Home, nil)
			}},
		{ID: "V04", File: "pid-file", Layout: "gateway.lock free, gateway.pid naming a dead pid, gateway_state.json running nested 1500 deep", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				r := e.Record(e.Dead("hermes", "gateway", "run"), e.Home)
				r["gateway_state"] = "running"
				e.Write(e.StateFile(), nestedRecord(r, DeepNesting))
				return e.freeLockRecord(e.Dead("hermes", "gateway", "run"), e.Home, nil)
			}},

		// A command line Hermes reads as "" is unreadable where "not
		// live_cmdline" tests it, and read where "is not None" does.
		{ID: "V05", File: "pid-file", Layout: `gateway.lock held, gateway record (exact start_time) naming a live process whose argv is [" "] (Hermes reads "": the record's argv decides)`, Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: blankPIDFile(BlankArgvs[0])},
		{ID: "V06", File: "pid-file", Layout: `V05 with argv ["\xff\x1c", "\u3000"] (dropped as not UTF-8, then stripped)`, Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: blankPIDFile(BlankArgvs[1])},
		{ID: "V07", File: "scoped-lock", Layout: `gateway record, start_time null, naming a live process whose argv is [" "] ("" is not None: read, no gateway)`, Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.exact(" "), e.Home, both(gatewayArgv, nullStart))
			}},

		// str.split() and str.strip() know more white space than
		// strings.Fields and strings.TrimSpace.
		{ID: "V08", File: "scoped-lock", Layout: `gateway record, start_time null, live argv ["hermes\x1cgateway\x1crun", "'x"] (shlex fails on the quote; str.split() splits at \x1c)`, Hermes: "live", Verdict: "alive", Action: "keep", Needs: "unix",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.exact("hermes\x1cgateway\x1crun", "'x"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "V09", File: "scoped-lock", Layout: `gateway record, start_time null, live argv ["\x1chermes", "gateway", "run\x1f"] (str.strip() drops \x1c and \x1f)`, Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.exact("\x1chermes", "gateway", "run\x1f"), e.Home, both(gatewayArgv, nullStart))
			}},

		// Path.resolve() follows a link before it applies the ".." after it.
		{ID: "V10", File: "pid-file", Layout: "home <b>/a/home, <b>/link -> <b>/a/b; gateway.lock held; live `hermes gateway run` recorded with hermes_home <b>/link/../home", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "unix",
			Build: func(e *Env) string {
				base := filepath.Dir(e.Home)
				e.Home = filepath.Join(base, "a", "home")
				for _, d := range []string{e.Home, filepath.Join(base, "a", "b")} {
					if err := os.MkdirAll(d, 0o700); err != nil {
						e.T.Fatal(err)
					}
				}
				if err := os.Symlink(filepath.Join(base, "a", "b"), filepath.Join(base, "link")); err != nil {
					e.T.Fatal(err)
				}
				e.HoldLock(e.RuntimeLock())
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), base+"/link/../home", nil)
			}},
	}
}
