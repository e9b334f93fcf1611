package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// devHeld is the second pass's deviation (issue 25), documented in
// docs/reliability.md.
const devHeld = "stricter: some process holds it locked, so it is in use as a lock whatever it holds; never moved"

// ReplaceLock unlinks gateway.lock and leaves a fresh one nobody holds,
// as a restore, a sync or `rm` does under a live gateway.
func (e *Env) ReplaceLock() {
	e.T.Helper()
	if err := os.Remove(e.RuntimeLock()); err != nil {
		e.T.Fatal(err)
	}
	e.FreeLock()
}

// state writes gateway_state.json for gateway p of home in state st.
func (e *Env) state(p *Proc, home, st string) {
	e.record(e.StateFile(), p, home, func(r map[string]any) { r["gateway_state"] = st })
}

// secondPass are the layouts of issue 25's classes, several per class.
func secondPass() []Row {
	return []Row{
		// 1. get_running_pid's runtime-status fallback, before its cleanup.
		{ID: "R01", File: "pid-file", Layout: "real gateway whose gateway.lock was unlinked and re-created (free); gateway_state.json running names it", Hermes: "live", Verdict: "unknown", Action: "keep", Needs: "unlink",
			Build: func(e *Env) string {
				g := e.Gateway(e.Home, "", "json", "gateway", "run")
				e.ReplaceLock()
				e.state(g, e.Home, "running")
				return e.PIDFile()
			}},
		{ID: "R02", File: "pid-file", Layout: "R01 with gateway_state.json saying stopped", Hermes: "stale", Verdict: "reused", Action: "sweep", Needs: "unlink",
			Build: func(e *Env) string {
				g := e.Gateway(e.Home, "", "json", "gateway", "run")
				e.ReplaceLock()
				e.state(g, e.Home, "stopped")
				return e.PIDFile()
			}},
		{ID: "R03", File: "pid-file", Layout: "gateway.lock free, garbage gateway.pid an hour old, gateway_state.json draining names a live gateway", Hermes: "live", Verdict: "unknown", Action: "keep", Needs: "unlink",
			Build: func(e *Env) string {
				g := e.Gateway(e.Home, "", "none", "gateway", "run")
				e.ReplaceLock()
				e.state(g, e.Home, "draining")
				return e.aged(e.Write(e.PIDFile(), "\x00garbage"))
			}},
		{ID: "R04", File: "pid-file", Layout: "no gateway.lock file, gateway.pid naming a dead pid, gateway_state.json starting names a live `hermes gateway run`", Hermes: "live", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				e.state(e.Sleeper("hermes", "gateway", "run"), e.Home, "starting")
				return e.record(e.PIDFile(), e.Dead("hermes", "gateway", "run"), e.Home, nil)
			}},
		{ID: "R05", File: "pid-file", Layout: "gateway.lock free, gateway_state.json running names a live gateway of ANOTHER home", Hermes: "stale", Verdict: "reused", Action: "sweep",
			Build: func(e *Env) string {
				g := e.Gateway(e.Other, "", "json", "gateway", "run")
				e.FreeLock()
				e.state(g, e.Other, "running")
				return e.record(e.PIDFile(), g, e.Other, nil)
			}},
		{ID: "R06", File: "pid-file", Layout: "gateway.lock free, gateway_state.json names a live gateway with gateway_state 7 (not in Hermes' ignore set)", Hermes: "live", Verdict: "unknown", Action: "keep", Needs: "unlink",
			Build: func(e *Env) string {
				g := e.Gateway(e.Home, "", "json", "gateway", "run")
				e.ReplaceLock()
				e.record(e.StateFile(), g, e.Home, func(r map[string]any) { r["gateway_state"] = 7 })
				return e.PIDFile()
			}},

		// 2. Only Hermes' own names, and never a held file.
		{ID: "H01", File: "scoped-lock", Layout: "token-lock name holding garbage, an hour old, held (flock) by a live process", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devHeld,
			Build: func(e *Env) string {
				p := e.aged(e.Write(e.Scoped(), "\x00garbage"))
				e.HoldLock(p)
				e.Age(p, time.Hour)
				return p
			}},
		{ID: "H02", File: "scoped-lock", Layout: "token-lock name with a dead pid's record, held by a live process", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devHeld,
			Build: func(e *Env) string {
				p := e.record(e.Scoped(), e.Dead("hermes", "gateway", "run"), e.Home, nil)
				e.HoldLock(p)
				return p
			}},
		{ID: "H03", File: "leftover", Layout: "a token lock's .stale leftover an hour old, held by a live process", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devHeld,
			Build: func(e *Env) string {
				p := e.Write(e.Scoped()+".stale", "")
				e.HoldLock(p)
				e.Age(p, time.Hour)
				return p
			}},
		{ID: "H04", File: "pid-file", Layout: "gateway.lock free, gateway.pid of a dead pid held by a live process", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devHeld,
			Build: func(e *Env) string {
				p := e.freeLockRecord(e.Dead("hermes", "gateway", "run"), e.Home, nil)
				e.HoldLock(p)
				return p
			}},

		// 3. Parse as Python parses.
		{ID: "Y01", File: "scoped-lock", Layout: `our own live gateway, pid as " +4_242 " (Python's int() reads it)`, Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				e.Start("gateway", "hermes", []string{"gateway", "run"}, "CONFORMANCE_HOME="+e.Home, "CONFORMANCE_SCOPED="+e.Scoped(), "CONFORMANCE_SCOPEDFORM=pystr")
				return e.Scoped()
			}},
		{ID: "Y02", File: "pid-file", Layout: `our own live gateway (lock held), pid file as " +4_242 "`, Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "pystr", "gateway", "run"); return e.PIDFile() }},
		{ID: "Y03", File: "pid-file", Layout: "our own live gateway (lock held), legacy bare pid +4_242", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string { e.Gateway(e.Home, "", "pybare", "gateway", "run"); return e.PIDFile() }},
		{ID: "Y04", File: "scoped-lock", Layout: "pid 0 (a pid Hermes judges: no such process on Linux), an hour old", Hermes: "stale", Verdict: "dead", Action: "sweep", Needs: "linux",
			Build: func(e *Env) string {
				return e.aged(e.Write(e.Scoped(), `{"pid": 0, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": null}`))
			}},
		{ID: "Y05", File: "scoped-lock", Layout: "pid 1e400 (int() raises OverflowError: Hermes decides nothing), an hour old", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				return e.aged(e.Write(e.Scoped(), `{"pid": 1e400, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": null}`))
			}},
		{ID: "Y06", File: "marker", Layout: "planned-stop marker holding invalid UTF-8, an hour old", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string { return e.aged(e.Write(e.Marker(), "{\"target_pid\": \xff}")) }},
		{ID: "Y07", File: "marker", Layout: "planned-stop marker `{}`, an hour old", Hermes: "kept", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string { return e.aged(e.Write(e.Marker(), "{}")) }},
		{ID: "Y08", File: "marker", Layout: "planned-stop marker, fresh, target_pid 0", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: func(e *Env) string {
				return e.Write(e.Marker(), map[string]any{"target_pid": 0, "written_at": time.Now().UTC().Format(isoOffset)})
			}},
		{ID: "Y09", File: "pid-file", Layout: "no gateway.lock file, live `hermes gateway run`, hermes_home written as ~/… of this home", Hermes: "stale", Verdict: "alive", Action: "keep", Deviation: devNoLock, Needs: "linux",
			Build: func(e *Env) string {
				// A test home is rarely under $HOME (CI's is in /tmp): $HOME is
				// made its parent, for this row and the processes it runs.
				home := filepath.Dir(e.Home)
				e.T.Setenv("HOME", home)
				rel, err := filepath.Rel(home, e.Home)
				if err != nil || !filepath.IsLocal(rel) {
					e.T.Fatalf("%s is not under %s: %v", e.Home, home, err)
				}
				return e.record(e.PIDFile(), e.Sleeper("hermes", "gateway", "run"), "~/"+filepath.ToSlash(rel), nil)
			}},

		// 5. Size never sweeps a live gateway.
		{ID: "Z01", File: "scoped-lock", Layout: "live `hermes gateway run` with a 200 KiB argv, its own record, an hour old", Hermes: "live", Verdict: "alive", Action: "keep",
			Build: func(e *Env) string {
				// One argument may hold 128 KiB (MAX_ARG_STRLEN): four of 50.
				a := bigArg(50 << 10)
				p := e.Sleeper("hermes", "gateway", "run", a, a, a, a)
				return e.aged(e.record(e.Scoped(), p, e.Home, nil))
			}},
		{ID: "Z02", File: "scoped-lock", Layout: "a 200 KiB record naming a dead pid, an hour old", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: func(e *Env) string {
				return e.aged(e.record(e.Scoped(), e.Dead("hermes", "gateway", "run"), e.Home, func(r map[string]any) { r["argv"] = []string{"hermes", "gateway", "run", bigArg(200 << 10)} }))
			}},
	}
}

// bigArg is an argument n bytes long.
func bigArg(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// Snapshot is a judged file as it was before a sweep.
type Snapshot struct {
	data []byte
	info os.FileInfo
}

// Snap records path's bytes and identity.
func Snap(t testing.TB, path string) Snapshot {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{data, fi}
}

// Same fails t unless path still has the bytes and inode (file index)
// it had when snapped.
func (s Snapshot) Same(t testing.TB, path string) {
	t.Helper()
	now := Snap(t, path)
	if !bytes.Equal(now.data, s.data) || !os.SameFile(now.info, s.info) {
		t.Fatalf("%s was kept, but not as it was: bytes equal %v, same inode %v", path, bytes.Equal(now.data, s.data), os.SameFile(now.info, s.info))
	}
}

// isoRows are markers dated as only Python's fromisoformat reads them.
func isoRows() []Row {
	fresh := func(layout string) func(e *Env) string {
		return func(e *Env) string {
			return e.marker(e.Sleeper("hermes", "gateway", "run"), time.Now().UTC().Format(layout))
		}
	}
	return []Row{
		{ID: "Y10", File: "marker", Layout: "planned-stop marker, fresh, written_at with offset +0000", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: fresh("2006-01-02T15:04:05.000000+0000")},
		{ID: "Y11", File: "marker", Layout: "planned-stop marker, fresh, written_at with a space and offset +00", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: fresh("2006-01-02 15:04:05+00")},
		{ID: "Y12", File: "marker", Layout: "planned-stop marker, fresh, basic format 20060102T150405Z", Hermes: "usable", Verdict: "unknown", Action: "keep",
			Build: fresh("20060102T150405Z")},
		{ID: "Y13", File: "marker", Layout: "planned-stop marker, fresh, written_at without offset (naive: TypeError)", Hermes: "stale", Verdict: "dead", Action: "sweep",
			Build: fresh("2006-01-02T15:04:05")},
	}
}
