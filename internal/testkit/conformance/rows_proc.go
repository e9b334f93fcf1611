package conformance

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
)

// commEnv names a helper process (see setComm) before it does anything.
const commEnv = "CONFORMANCE_COMM"

// badName is a process name that is not UTF-8: Hermes' text reads of
// /proc/<pid>/stat and /proc/<pid>/status raise UnicodeDecodeError on it.
const badName = "herm\xffes"

// cutName is a name whose last character the kernel cuts in half: comm
// holds 15 bytes, "python" and four and a half é.
var cutName = "python" + strings.Repeat("\u00e9", 5)

// devTicks is the deviation of /proc as Hermes reads it (issue 25, class
// 4), documented in docs/reliability.md.
const devTicks = "stricter: the true clock-tick start time (/proc field 22) proves the same process too, though Hermes, which reads this process's start time as psutil's epoch time, calls it a conflict"

// named starts a process that names itself comm, with argv name args.
func (e *Env) named(comm, name string, args ...string) *Proc {
	e.T.Helper()
	return e.Start("sleep", name, args, commEnv+"="+comm)
}

// namedGateway is Gateway (json pid form) for a gateway that names itself
// comm before it writes its records, which then carry the start time
// Hermes records for it.
func (e *Env) namedGateway(comm, scoped string) *Proc {
	e.T.Helper()
	return e.Start("gateway", "hermes", []string{"gateway", "run"}, "CONFORMANCE_HOME="+e.Home,
		"CONFORMANCE_SCOPED="+scoped, "CONFORMANCE_PIDFORM=json", commEnv+"="+comm)
}

// hermesStart sets a record's start time to what Hermes records for p;
// epoch says that must be psutil's epoch time, Hermes' own read of
// /proc/<pid>/stat raising.
func (e *Env) hermesStart(p *Proc, epoch bool) func(map[string]any) {
	e.T.Helper()
	l, err := e.prober.Look(context.Background(), p.PID)
	if err != nil {
		e.T.Fatal(err)
	}
	if (l.EpochStartTime != nil) != epoch || l.NameNotUTF8 != epoch {
		e.T.Fatalf("pid %d %q: epoch start time %v, name not UTF-8 %v; want %v", p.PID, p.Argv, l.EpochStartTime, l.NameNotUTF8, epoch)
	}
	v := *l.HermesStartTime()
	return func(r map[string]any) { r["start_time"] = v }
}

// statField is field n (counted from 1, as proc(5) counts) of p's
// /proc/<pid>/stat, read after the last ')' as the kernel lays it out.
func (e *Env) statField(p *Proc, n int) int64 {
	e.T.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	if err != nil {
		e.T.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	v, err := strconv.ParseInt(f[n-3], 10, 64)
	if err != nil {
		e.T.Fatal(err)
	}
	return v
}

// procRows are the layouts of /proc as Hermes reads it (issue 25, class
// 4): processes whose names Hermes' text reads of /proc fail on or split
// otherwise, with the records Hermes writes for them.
func procRows() []Row {
	return []Row{
		{ID: "U01", File: "scoped-lock", Layout: "live `hermes gateway run` named `herm\\xffes` (not UTF-8), start_time psutil's epoch time as Hermes records it", Hermes: "kept", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.named(badName, "hermes", "gateway", "run")
				return e.record(e.Scoped(), p, e.Home, e.hermesStart(p, true))
			}},
		{ID: "U02", File: "pid-file", Layout: "our own live gateway (lock held) named `herm\\xffes`, its records as Hermes writes them (epoch start_time)", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string { e.namedGateway(badName, ""); return e.PIDFile() }},
		{ID: "U03", File: "pid-file", Layout: "U02 with gateway.lock unlinked and re-created (free); gateway_state.json running names it, epoch start_time", Hermes: "live", Verdict: "unknown", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				g := e.namedGateway(badName, "")
				e.ReplaceLock()
				e.record(e.StateFile(), g, e.Home, both(e.hermesStart(g, true), func(r map[string]any) { r["gateway_state"] = "running" }))
				return e.PIDFile()
			}},
		{ID: "U04", File: "scoped-lock", Layout: "live gateway exec'd as `herm\\xffes gateway run` (Hermes' cmdline read drops the byte: `hermes`), start_time null", Hermes: "kept", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper(badName, "gateway", "run"), e.Home, nullStart)
			}},
		{ID: "U05", File: "scoped-lock", Layout: "live `pythonééééé -m hermes_cli.main gateway run`, comm cut mid-character at 15 bytes, epoch start_time", Hermes: "kept", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.Sleeper(cutName, "-m", "hermes_cli.main", "gateway", "run")
				return e.record(e.Scoped(), p, e.Home, e.hermesStart(p, true))
			}},
		{ID: "U06", File: "scoped-lock", Layout: "U01 stopped (SIGSTOP): Hermes' _process_is_stopped raises on /proc/<pid>/status", Hermes: "kept", Verdict: "unknown", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.named(badName, "hermes", "gateway", "run")
				path := e.record(e.Scoped(), p, e.Home, e.hermesStart(p, true))
				e.Stop(p)
				return path
			}},
		{ID: "U07", File: "scoped-lock", Layout: "U06 with start_time the true clock-tick field", Hermes: "stale", Verdict: "unknown", Action: "keep", Deviation: devTicks, Needs: "linux",
			Build: func(e *Env) string {
				p := e.named(badName, "hermes", "gateway", "run")
				e.hermesStart(p, true)
				path := e.record(e.Scoped(), p, e.Home, nil)
				e.Stop(p)
				return path
			}},
		{ID: "U08", File: "scoped-lock", Layout: "stopped `sleeper` named `herm\\xffes`, gateway argv in the record, epoch start_time (not a gateway: stale before the check that raises)", Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.named(badName, "sleeper")
				path := e.record(e.Scoped(), p, e.Home, both(gatewayArgv, e.hermesStart(p, true)))
				e.Stop(p)
				return path
			}},
		{ID: "U09", File: "scoped-lock", Layout: "live `hermes gateway run` named `hermes\\x1cgw` (UTF-8; str.split() splits at \\x1c), start_time as that split reads it", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.named("hermes\x1cgw", "hermes", "gateway", "run")
				e.hermesStart(p, false)
				// The name is two fields to str.split(): Hermes' 22nd is
				// the kernel's 21st (itrealvalue).
				return e.record(e.Scoped(), p, e.Home, func(r map[string]any) { r["start_time"] = e.statField(p, 21) })
			}},
		{ID: "U10", File: "pid-file", Layout: "stopped (SIGSTOP) real gateway named `herm\\xffes` still holding gateway.lock, epoch start_time", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				e.Stop(e.namedGateway(badName, ""))
				return e.PIDFile()
			}},
	}
}
