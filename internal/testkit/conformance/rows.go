package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Row is one layout: how to build it, what Hermes' own code says of the
// file, and the verdict and dry-run action the supervisor must give.
type Row struct {
	// ID is the row of hermes-verdicts.md (P, S, G, L, M), or O for ours.
	ID string
	// File is the kind of the judged file, as `sweep --json` names it.
	File   string
	Layout string
	// Hermes is what Hermes' code says: live, stale or usable.
	Hermes string
	// Verdict and Action are what `sweep --dry-run` must say.
	Verdict, Action string
	// Deviation says why we differ from Hermes; empty when we agree.
	Deviation string
	// Needs names what the OS must offer: "signals" (SIGSTOP, zombies),
	// "linux", "notlinux", "unlink" (unlinking a file some process
	// holds open), or "unix" (a process given an exact argv, argv[0]
	// included, and paths whose ".." applies after a link, as POSIX has).
	Needs string
	// Build lays the files out and returns the judged file's path.
	Build func(e *Env) string
}

// Runs reports whether the row can be built on this OS, and if not why.
func (r Row) Runs() (bool, string) {
	switch r.Needs {
	case "signals":
		return hasSignals, "needs SIGSTOP and zombies"
	case "linux":
		return onLinux, "Linux rule"
	case "notlinux":
		return !onLinux, "macOS and Windows rule"
	case "unlink":
		return canUnlinkOpen, "an open file cannot be unlinked here"
	case "unix":
		return isUnix, "POSIX rule: an exact argv, and \"..\" resolved after links"
	}
	return true, ""
}

// NamesProcesses reports whether a helper can take a process name that
// Hermes reads as text (CONFORMANCE_COMM): on Linux only.
func NamesProcesses() bool { return onLinux }

// RealAction is what a real sweep does where a dry run says action.
func RealAction(action string) string {
	switch action {
	case "sweep":
		return "swept"
	case "quarantine":
		return "quarantined"
	}
	return action
}

// Kept reports whether the file is still there after a real sweep that
// took action.
func Kept(action string) bool { return action != "swept" && action != "quarantined" }

// Deviations of ours, each documented in docs/reliability.md.
const (
	devNoLock    = "stricter: no gateway.lock file at all may be an older Hermes, so a record naming a live run-or-restart gateway of this home stands"
	devGrace     = "stricter: an empty or cut-short file younger than 10 s may be mid-write (O_EXCL create, then write); kept until it is older"
	devWrote     = "stricter: its owner's pid, start time and full argv equal the record's, so it wrote the record itself; never deleted"
	devStartTime = "stricter: a start time that cannot be epoch centiseconds (2000 to now+1 day; old Hermes wrote a hash on Windows) is unknown, not a conflict"
	devEmptyObj  = "kinder: Hermes neither trusts nor removes it, so its O_EXCL create fails forever; we move it aside"
)

func (e *Env) freeLockRecord(p *Proc, home string, change func(map[string]any)) string {
	e.FreeLock()
	return e.record(e.PIDFile(), p, home, change)
}

func (e *Env) record(path string, p *Proc, home string, change func(map[string]any)) string {
	r := e.Record(p, home)
	if change != nil {
		change(r)
	}
	return e.Write(path, r)
}

func gatewayArgv(r map[string]any) { r["argv"] = GatewayArgv }
func nullStart(r map[string]any)   { r["start_time"] = nil }
func shiftStart(d int64) func(map[string]any) {
	return func(r map[string]any) { r["start_time"] = *r["start_time"].(*int64) + d }
}
func noHome(r map[string]any) { delete(r, "hermes_home") }
func both(fs ...func(map[string]any)) func(map[string]any) {
	return func(r map[string]any) {
		for _, f := range fs {
			f(r)
		}
	}
}

func (e *Env) marker(p *Proc, writtenAt string) string {
	return e.Write(e.Marker(), map[string]any{"target_pid": p.PID, "target_start_time": p.Start, "stopper_pid": 777, "written_at": writtenAt})
}

const isoOffset = "2006-01-02T15:04:05.000000-07:00"

// Rows returns every layout of hermes-verdicts.md, then ours, then
// those of the second pass, then those of /proc as Hermes reads it, then
// those of profiles and the multiplexer, then those where Python reads,
// splits or resolves otherwise than Go, then those where it lowers or
// splits a command line otherwise.
func Rows() []Row {
	return append(append(append(append(append(append(append(firstPass(), secondPass()...), isoRows()...), procRows()...), profileRows()...), pythonRows()...), caseRows()...), unscopedRows()...)
}

// RowsHere returns the rows that can be built on this OS (see Runs),
// counting the needs in met as met: a row of another OS's rule is no test
// here, rather than a skip. Every row runs on one of the OSes CI covers:
// Linux, and Windows under Wine, which has no SIGSTOP and keeps open files.
func RowsHere(met ...string) []Row {
	var out []Row
	for _, r := range Rows() {
		if ok, _ := r.Runs(); ok || slices.Contains(met, r.Needs) {
			out = append(out, r)
		}
	}
	return out
}

func firstPass() []Row {
	return []Row{
		// gateway.pid
		{ID: "P01", File: "pid-file", Layout: "our own live gateway (holds gateway.lock)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "json", "gateway", "run"); return e.PIDFile() }},
		{ID: "P02", File: "pid-file", Layout: "dead pid, start_time a number", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string { return e.freeLockRecord(e.Dead("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "P03", File: "pid-file", Layout: "dead pid, start_time null", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string { return e.freeLockRecord(e.Dead("hermes", "gateway", "run"), e.Home, nullStart) }},
		{ID: "P04", File: "pid-file", Layout: "zombie, its exact start_time, gateway argv", Hermes: "stale", Verdict: "zombie", Action: "sweep", Needs: "signals",
			Build: func(e *Env) string { return e.freeLockRecord(e.Zombie("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "P05", File: "pid-file", Layout: "stopped process with gateway cmdline, exact start_time, lock free", Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "signals",
			Build: func(e *Env) string {
				p := e.Sleeper("hermes", "gateway", "run")
				e.Stop(p)
				return e.freeLockRecord(p, e.Home, nil)
			}},
		{ID: "P07", File: "pid-file", Layout: "live unrelated process, exact start_time, gateway argv", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string { return e.freeLockRecord(e.Sleeper("sleep", "100"), e.Home, gatewayArgv) }},
		{ID: "P08", File: "pid-file", Layout: "live unrelated process, start_time null", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.freeLockRecord(e.Sleeper("sleep", "100"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "P09", File: "pid-file", Layout: "live unrelated process, wrong start_time", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.freeLockRecord(e.Sleeper("sleep", "100"), e.Home, both(gatewayArgv, shiftStart(1000)))
			}},
		{ID: "P10", File: "pid-file", Layout: "live `hermes gateway run`, different start_time", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.freeLockRecord(e.Sleeper("hermes", "gateway", "run"), e.Home, shiftStart(-1000))
			}},
		{ID: "P11", File: "pid-file", Layout: "live `hermes gateway run`, exact start_time, NO gateway.lock file", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string { return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "P11f", File: "pid-file", Layout: "P11 with gateway.lock present but free", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string { return e.freeLockRecord(e.Sleeper("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "P12", File: "pid-file", Layout: "live `hermes gateway run`, start_time null, NO gateway.lock file", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), e.Home, nullStart)
			}},
		{ID: "P12f", File: "pid-file", Layout: "P12 with gateway.lock present but free", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string { return e.freeLockRecord(e.Sleeper("hermes", "gateway", "run"), e.Home, nullStart) }},
		{ID: "P13", File: "pid-file", Layout: "legacy bare integer naming a live unrelated process", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				e.FreeLock()
				return e.Write(e.PIDFile(), fmt.Sprintf("%d\n", e.Sleeper("sleep", "100").PID))
			}},
		{ID: "P14", File: "pid-file", Layout: "legacy bare integer naming our own live gateway (lock held)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "bare", "gateway", "run"); return e.PIDFile() }},
		{ID: "P15", File: "pid-file", Layout: "UTF-8 BOM + JSON, dead pid", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string {
				p := e.freeLockRecord(e.Dead("hermes", "gateway", "run"), e.Home, nil)
				return e.Write(p, append([]byte("\ufeff"), e.read(p)...))
			}},
		{ID: "P16", File: "pid-file", Layout: "UTF-8 BOM + JSON, our own live gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "bom", "gateway", "run"); return e.PIDFile() }},
		{ID: "P17", File: "pid-file", Layout: "empty file, written just now (gateway.lock free)", Hermes: "stale", Verdict: "unknown", Action: "sweep",
			Build: func(e *Env) string { e.FreeLock(); return e.Write(e.PIDFile(), "") }},
		{ID: "P18", File: "pid-file", Layout: "empty file, an hour old", Hermes: "stale", Verdict: "unknown", Action: "sweep",
			Build: func(e *Env) string { e.FreeLock(); return e.aged(e.Write(e.PIDFile(), "")) }},
		{ID: "P19", File: "pid-file", Layout: "garbage bytes, an hour old", Hermes: "stale", Verdict: "unknown", Action: "sweep",
			Build: func(e *Env) string { e.FreeLock(); return e.aged(e.Write(e.PIDFile(), "\x00\xff\x13garbage")) }},
		{ID: "P20", File: "pid-file", Layout: "names a live real gateway of ANOTHER home, this home's lock free", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.freeLockRecord(e.Gateway(e.Other, "", "json", "gateway", "run"), e.Other, nil)
			}},
		{ID: "P21", File: "pid-file", Layout: "pid as a JSON string, our own live gateway, an hour old", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "string", "gateway", "run"); return e.aged(e.PIDFile()) }},
		{ID: "P22", File: "pid-file", Layout: "our own live gateway started as bare `hermes gateway`", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "json", "gateway"); return e.PIDFile() }},

		// scoped locks
		{ID: "S01", File: "scoped-lock", Layout: "our own live gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, e.Scoped(), "json", "gateway", "run"); return e.Scoped() }},
		{ID: "S02", File: "scoped-lock", Layout: "dead pid", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string { return e.record(e.Scoped(), e.Dead("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "S03", File: "scoped-lock", Layout: "zombie, exact start_time", Hermes: "stale", Verdict: "zombie", Action: "sweep", Needs: "signals",
			Build: func(e *Env) string { return e.record(e.Scoped(), e.Zombie("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "S04", File: "scoped-lock", Layout: "stopped (SIGSTOP) real gateway, its own lock", Hermes: "stale", Verdict: "stopped", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				e.Stop(e.Gateway(e.Home, e.Scoped(), "json", "gateway", "run"))
				return e.Scoped()
			}},
		{ID: "S04m", File: "scoped-lock", Layout: "S04 on macOS, where Hermes cannot see the stopped state", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "notlinux",
			Build: func(e *Env) string {
				p := e.Gateway(e.Home, e.Scoped(), "json", "gateway", "run")
				if hasSignals {
					e.Stop(p)
				}
				return e.Scoped()
			}},
		{ID: "S05", File: "scoped-lock", Layout: "live unrelated process, exact start_time, gateway argv", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string { return e.record(e.Scoped(), e.Sleeper("sleep", "100"), e.Home, gatewayArgv) }},
		{ID: "S06", File: "scoped-lock", Layout: "live unrelated process, start_time null", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("sleep", "100"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "S07", File: "scoped-lock", Layout: "live unrelated process, wrong start_time", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("sleep", "100"), e.Home, both(gatewayArgv, shiftStart(1000)))
			}},
		{ID: "S08", File: "scoped-lock", Layout: "live `hermes gateway run`, different start_time", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, shiftStart(-1000))
			}},
		{ID: "S09", File: "scoped-lock", Layout: "live `hermes gateway run`, exact start_time", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "S10", File: "scoped-lock", Layout: "live `hermes gateway run`, start_time null", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, nullStart)
			}},
		{ID: "S11", File: "scoped-lock", Layout: "legacy bare integer naming a live real gateway", Hermes: "stale", Verdict: "unknown", Action: "quarantine",
			Build: func(e *Env) string {
				return e.Write(e.Scoped(), fmt.Sprint(e.Gateway(e.Home, "", "json", "gateway", "run").PID))
			}},
		{ID: "S12", File: "scoped-lock", Layout: "legacy bare integer naming a dead pid", Hermes: "stale", Verdict: "unknown", Action: "quarantine",
			Build: func(e *Env) string { return e.Write(e.Scoped(), fmt.Sprint(e.Dead("hermes", "gateway", "run").PID)) }},
		{ID: "S13", File: "scoped-lock", Layout: "UTF-8 BOM + JSON naming a live real gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.Start("gateway", "hermes", []string{"gateway", "run"}, "CONFORMANCE_HOME="+e.Home, "CONFORMANCE_SCOPED="+e.Scoped(), "CONFORMANCE_SCOPEDFORM=bom")
				return e.Scoped()
			}},
		{ID: "S14", File: "scoped-lock", Layout: "empty file, written just now", Hermes: "stale", Verdict: "unknown", Action: "keep", Deviation: devGrace,
			Build: func(e *Env) string { return e.Write(e.Scoped(), "") }},
		{ID: "S15", File: "scoped-lock", Layout: "empty file, an hour old", Hermes: "stale", Verdict: "unknown", Action: "quarantine",
			Build: func(e *Env) string { return e.aged(e.Write(e.Scoped(), "")) }},
		{ID: "S16", File: "scoped-lock", Layout: "garbage, an hour old", Hermes: "stale", Verdict: "unknown", Action: "quarantine",
			Build: func(e *Env) string { return e.aged(e.Write(e.Scoped(), "\x00\xff\x13garbage")) }},
		{ID: "S17", File: "scoped-lock", Layout: "live real gateway of ANOTHER home holding the token", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Other, e.Scoped(), "json", "gateway", "run"); return e.Scoped() }},
		{ID: "S18", File: "scoped-lock", Layout: "our own live gateway started as bare `hermes gateway`", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, e.Scoped(), "json", "gateway"); return e.Scoped() }},
		{ID: "S19", File: "scoped-lock", Layout: `{"pid": null, ...}, an hour old`, Hermes: "stale", Verdict: "unknown", Action: "quarantine",
			Build: func(e *Env) string {
				return e.aged(e.Write(e.Scoped(), `{"pid": null, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": null}`))
			}},

		// gateway_state.json, gateway.lock, markers
		{ID: "G01", File: "state", Layout: "state running, dead pid, no pid file", Hermes: "stale", Verdict: "dead", Action: "mark-stopped",
			Build: func(e *Env) string {
				return e.record(e.StateFile(), e.Dead("hermes", "gateway", "run"), e.Home, func(r map[string]any) { r["gateway_state"] = "running" })
			}},
		{ID: "G02", File: "state", Layout: "state running, live unrelated process (exact start)", Hermes: "stale", Verdict: "reused", Action: "mark-stopped",
			Build: func(e *Env) string {
				return e.record(e.StateFile(), e.Sleeper("sleep", "100"), e.Home, both(gatewayArgv, func(r map[string]any) { r["gateway_state"] = "running" }))
			}},
		{ID: "L01", File: "runtime-lock", Layout: "gateway.lock with a dead pid's JSON, not held", Hermes: "stale", Verdict: "dead", Action: "ok",
			Build: func(e *Env) string { return e.record(e.RuntimeLock(), e.Dead("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "M01", File: "marker", Layout: "planned-stop marker, fresh, target dead", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				return e.marker(e.Dead("hermes", "gateway", "run"), time.Now().UTC().Format(isoOffset))
			}},
		{ID: "M02", File: "marker", Layout: "planned-stop marker, 5 min old, target live", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string {
				return e.marker(e.Sleeper("hermes", "gateway", "run"), time.Now().Add(-5*time.Minute).UTC().Format(isoOffset))
			}},
		{ID: "M03", File: "marker", Layout: "planned-stop marker, fresh, written_at with 'Z', target live", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				return e.marker(e.Sleeper("hermes", "gateway", "run"), time.Now().UTC().Format("2006-01-02T15:04:05Z"))
			}},

		// Ours: old Hermes (no gateway.lock, no hermes_home), the
		// stricter rules, and the branches of the rules.
		{ID: "O01", File: "pid-file", Layout: "no gateway.lock file, dead pid", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string { return e.record(e.PIDFile(), e.Dead("hermes", "gateway", "run"), e.Home, nil) }},
		{ID: "O02", File: "pid-file", Layout: "no gateway.lock file, old gateway as bare `hermes gateway`, no hermes_home", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string { return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway"), e.Home, noHome) }},
		{ID: "O03", File: "pid-file", Layout: "no gateway.lock file, stopped (SIGSTOP) old gateway", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock, Needs: "signals",
			Build: func(e *Env) string {
				p := e.Sleeper("hermes", "gateway", "run")
				e.Stop(p)
				return e.record(e.PIDFile(), p, e.Home, noHome)
			}},
		{ID: "O04", File: "pid-file", Layout: "no gateway.lock file, `hermes -p work gateway`, start_time null, no hermes_home", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock,
			Build: func(e *Env) string {
				return e.record(e.PIDFile(), e.Sleeper("hermes", "-p", "work", "gateway"), e.Home, both(nullStart, noHome))
			}},
		{ID: "O05", File: "pid-file", Layout: "no gateway.lock file, record of ANOTHER home naming a live gateway", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string { return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), e.Other, nil) }},
		{ID: "O06", File: "pid-file", Layout: "no gateway.lock file, live `hermes gateway -v` (subcommand -v), gateway-run record", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "-v"), e.Home, gatewayArgv)
			}},
		{ID: "O07", File: "pid-file", Layout: "no gateway.lock file, zombie", Hermes: "stale", Verdict: "zombie", Action: "sweep", Needs: "signals",
			Build: func(e *Env) string {
				return e.record(e.PIDFile(), e.Zombie("hermes", "gateway", "run"), e.Home, noHome)
			}},
		{ID: "O08", File: "pid-file", Layout: "no gateway.lock file, empty file written just now", Hermes: "stale", Verdict: "unknown", Action: "keep", Deviation: devGrace,
			Build: func(e *Env) string { return e.Write(e.PIDFile(), "") }},
		{ID: "O09", File: "pid-file", Layout: "gateway.lock free, pid file written by `python3 gw.py gateway run` itself", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.freeLockRecord(e.Sleeper("python3", "gw.py", "gateway", "run"), e.Home, nil)
			}},
		{ID: "O10", File: "scoped-lock", Layout: "written by `python3 gw.py gateway run` itself (same pid, start, argv)", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devWrote,
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("python3", "gw.py", "gateway", "run"), e.Home, nil)
			}},
		{ID: "O11", File: "scoped-lock", Layout: "our own live `hermes gateway restart` (in-process run), its own lock", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devWrote,
			Build: func(e *Env) string { e.Gateway(e.Home, e.Scoped(), "json", "gateway", "restart"); return e.Scoped() }},
		{ID: "O12", File: "pid-file", Layout: "our own live `hermes gateway restart` (lock held)", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "json", "gateway", "restart"); return e.PIDFile() }},
		{ID: "O13", File: "scoped-lock", Layout: "live `hermes -p work gateway`, start_time null", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "-p", "work", "gateway"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "O14", File: "scoped-lock", Layout: "live `hermes gateway status`, start_time null", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "status"), e.Home, both(gatewayArgv, nullStart))
			}},
		{ID: "O15", File: "scoped-lock", Layout: "live `hermes gateway run`, impossible start_time -5 (macOS/Windows)", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devStartTime, Needs: "notlinux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, func(r map[string]any) { r["start_time"] = -5 })
			}},
		{ID: "O15l", File: "scoped-lock", Layout: "O15 on Linux, where any other start time conflicts", Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, func(r map[string]any) { r["start_time"] = -5 })
			}},
		{ID: "O16", File: "scoped-lock", Layout: "live gateway whose comm has a space; start_time as Hermes' whitespace split reads it", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "linux",
			Build: func(e *Env) string {
				p := e.Sleeper("my hermes", "gateway", "run")
				l, err := e.prober.Look(context.Background(), p.PID)
				if err != nil || l.NaiveStartTime == nil {
					e.T.Fatalf("no naive start time for %q: %v", p.Argv, err)
				}
				return e.record(e.Scoped(), p, e.Home, both(gatewayArgv, func(r map[string]any) { r["start_time"] = *l.NaiveStartTime }))
			}},
		{ID: "O17", File: "state", Layout: "state running, real gateway stopped (SIGSTOP)", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "signals",
			Build: func(e *Env) string {
				p := e.Gateway(e.Home, "", "json", "gateway", "run")
				e.Stop(p)
				return e.record(e.StateFile(), p, e.Home, func(r map[string]any) { r["gateway_state"] = "running" })
			}},
		{ID: "O18", File: "state", Layout: "state stopped, dead pid", Hermes: "stale", Verdict: "dead", Action: "ok",
			Build: func(e *Env) string {
				return e.record(e.StateFile(), e.Dead("hermes", "gateway", "run"), e.Home, func(r map[string]any) { r["gateway_state"] = "stopped" })
			}},
		{ID: "O19", File: "pid-file", Layout: "gateway.lock held by a live gateway, gateway.pid naming a dead pid", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.Gateway(e.Home, "", "none", "gateway", "run")
				return e.record(e.PIDFile(), e.Dead("hermes", "gateway", "run"), e.Home, nil)
			}},
		{ID: "O20", File: "marker", Layout: "planned-stop marker, fresh, no target_pid", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string {
				return e.Write(e.Marker(), map[string]any{"target_pid": nil, "written_at": time.Now().UTC().Format(isoOffset)})
			}},
		{ID: "O21", File: "scoped-lock", Layout: "live `hermes gateway run`, start_time in the future (another boot)", Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Sleeper("hermes", "gateway", "run"), e.Home, shiftStart(1_000_000_000))
			}},
		{ID: "O22", File: "scoped-lock", Layout: "pid as a JSON string naming our own live gateway", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				return e.record(e.Scoped(), e.Gateway(e.Home, "", "json", "gateway", "run"), e.Home, func(r map[string]any) { r["pid"] = fmt.Sprint(r["pid"]) })
			}},
		{ID: "O23", File: "scoped-lock", Layout: "`{}`", Hermes: "live", Verdict: "unknown", Action: "quarantine", Deviation: devEmptyObj,
			Build: func(e *Env) string { return e.Write(e.Scoped(), "{}") }},
		{ID: "O24", File: "pid-file", Layout: "gateway.lock held, pid file of ANOTHER home's live gateway", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				g := e.Gateway(e.Other, "", "json", "gateway", "run")
				e.HoldLock(e.RuntimeLock())
				return e.record(e.PIDFile(), g, e.Other, nil)
			}},
		{ID: "O25", File: "pid-file", Layout: "stopped (SIGSTOP) real gateway still holding gateway.lock", Hermes: "live", Verdict: "alive", Action: "keep", Needs: "signals",
			Build: func(e *Env) string {
				e.Stop(e.Gateway(e.Home, "", "json", "gateway", "run"))
				return e.PIDFile()
			}},
	}
}

func (e *Env) aged(path string) string { e.Age(path, time.Hour); return path }

func (e *Env) read(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		e.T.Fatal(err)
	}
	return b
}

// Table renders rows as the markdown conformance table of
// docs/reliability.md.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| layout | file | layout built | Hermes' code says | we say (verdict/action) | agree |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		agree := "yes"
		if r.Deviation != "" {
			agree = "**no**: " + r.Deviation
		}
		only := ""
		if r.Needs != "" {
			only = " (" + r.Needs + " only)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s%s | %s | %s/%s | %s |\n", r.ID, r.File, r.Layout, only, r.Hermes, r.Verdict, r.Action, agree)
	}
	return b.String()
}
