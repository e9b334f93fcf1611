package systemdtest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// profileRow is what this test reads of a `status --all --json` row.
type profileRow struct {
	Profile    string `json:"profile"`
	Home       string `json:"home"`
	Supervised string `json:"supervised"`
	Source     string `json:"source"`
	Hermes     string `json:"hermes"`
	HermesPID  int    `json:"hermes_pid"`
	Service    string `json:"service"`
	Status     *struct {
		Supervisor struct {
			PID int `json:"pid"`
		} `json:"supervisor"`
		Child *struct {
			PID  int      `json:"pid"`
			Argv []string `json:"argv"`
		} `json:"child"`
	} `json:"status"`
}

// TestProfilesSideBySide installs two of a lingering user's Hermes
// profiles as services side by side, as issue 26 asks: each gets a user
// unit of its own (the root home's unit untouched), its own supervisor and
// its own gateway run as `hermes -p NAME gateway run` with its own
// HERMES_HOME, and `status --all` shows both running under their
// supervisors. A killed gateway restarts only its own profile's; stop and
// uninstall of one leave the other running and installed.
func TestProfilesSideBySide(t *testing.T) {
	requireHost(t)
	t.Parallel()
	bin := build(t)
	began := time.Now()
	m := boot(t, bin)
	const user = "alice"
	uid := m.lingeringUser(user)

	// A stand-in for Hermes on the PATH, so that the units run the
	// gateway as Hermes' own do (`hermes -p NAME gateway run`, which
	// `install --demo` would not show): a Hermes that lists
	// --external-supervisor in its help, whose gateway is the demo one.
	// In a profile's home the demo claims a bot token of that profile's
	// own in the lock dir both share, as two real bots would.
	m.must("sh", "-c", `cat >/usr/local/bin/hermes <<'E'
#!/bin/sh
for a in "$@"; do
  if [ "$a" = --help ]; then echo 'usage: hermes gateway run [-h] [--replace] [--external-supervisor]'; exit 0; fi
done
exec /usr/local/bin/hermes-supervisor demo-gateway "$@"
E
chmod 755 /usr/local/bin/hermes`)
	// The profiles as `hermes profile create` leaves them: a directory
	// under the root's profiles/ holding a config.yaml.
	const root = "/home/alice/.hermes"
	profiles := []string{"family", "work"}
	homes := map[string]string{}
	for _, p := range profiles {
		homes[p] = root + "/profiles/" + p
	}
	m.must("sh", "-c", `for p in family work; do mkdir -p `+root+`/profiles/$p && echo 'model: demo' >`+root+`/profiles/$p/config.yaml; done && chown -R alice: `+root)

	as := func(argv ...string) (string, error) { return m.execAs(user, 60*time.Second, argv...) }
	mustAs := func(argv ...string) string {
		t.Helper()
		out, err := as(argv...)
		if err != nil {
			t.Fatalf("as %s: %s: %v\n%s", user, strings.Join(argv, " "), err, out)
		}
		return out
	}
	unitOf := func(p string) string { return "hermes-supervisor-" + p + ".service" }
	unitFile := func(p string) string { return "/home/alice/.config/systemd/user/" + unitOf(p) }

	for _, p := range profiles {
		out := mustAs("hermes-supervisor", "-p", p, "install")
		if !strings.Contains(out, unitOf(p)) {
			t.Errorf("install -p %s does not name its unit %s:\n%s", p, unitOf(p), out)
		}
	}
	t.Logf("%v: both profiles installed", time.Since(began))

	// Each profile: its own active unit, supervisor and gateway.
	sup, gw := map[string]string{}, map[string]string{}
	for _, p := range profiles {
		props := m.waitUnit(user, unitOf(p), 30*time.Second, "active with a gateway", func(props map[string]string) bool {
			return active(props) && m.gatewayPID(homes[p]) != ""
		}, "ActiveState", "MainPID", "StatusText", "Environment")
		if !strings.HasPrefix(props["StatusText"], "running: ") {
			t.Errorf("%s: StatusText %q, want the supervisor's state running", unitOf(p), props["StatusText"])
		}
		if !strings.Contains(props["Environment"], "HERMES_HOME="+homes[p]) {
			t.Errorf("%s: Environment %q lacks HERMES_HOME=%s", unitOf(p), props["Environment"], homes[p])
		}
		sup[p], gw[p] = props["MainPID"], m.gatewayPID(homes[p])
		m.checkGatewayCgroup(homes[p], "/user.slice/user-"+uid+".slice/user@"+uid+".service/app.slice/"+unitOf(p)+"/gateway")
		m.checkProfileGateway(gw[p], p, homes[p])
	}
	if sup["work"] == sup["family"] || sup["work"] == "0" || gw["work"] == gw["family"] {
		t.Errorf("the profiles share a process: supervisors %v, gateways %v", sup, gw)
	}
	if n := m.gateways(); n != 2 {
		t.Errorf("%d gateways run, want 2 (one per profile)", n)
	}
	// The root home's unit is not a profile's: neither install wrote it.
	if p := m.show(user, unit, "LoadState"); p["LoadState"] != "not-found" {
		t.Errorf("the root home's %s after installing two profiles: %v, want not-found", unit, p)
	}

	// status --all, text and JSON: both running under their supervisors.
	// The root home has none, so the worst of the homes is "not running".
	out, err := as("hermes-supervisor", "status", "--all")
	if exitCode(err) != 3 {
		t.Errorf("status --all with the root home unsupervised: exit %d, want 3:\n%s", exitCode(err), out)
	}
	for _, p := range profiles {
		row := regexp.MustCompile(`(?m)^` + p + `\s+` + regexp.QuoteMeta(homes[p]) + `\s+running\s+running, pid ` + gw[p] + `\s+user ` + regexp.QuoteMeta(unitFile(p)) + `\s`)
		if !row.MatchString(out) {
			t.Errorf("status --all has no row of %s running its gateway %s under %s:\n%s", p, gw[p], unitFile(p), out)
		}
	}
	if !regexp.MustCompile(`(?m)^default\s+` + regexp.QuoteMeta(root) + `\s+none\s+stopped\s+none\s`).MatchString(out) {
		t.Errorf("status --all: the root home is not listed as unsupervised and stopped:\n%s", out)
	}
	rows := m.statusAll(user)
	for _, p := range profiles {
		r := rows[p]
		switch {
		case r == nil:
			t.Errorf("status --all --json has no row of %s: %v", p, rows)
		case r.Supervised != "running" || r.Source != "endpoint" || r.Hermes != "running" || strconv.Itoa(r.HermesPID) != gw[p] || r.Service != "user "+unitFile(p):
			t.Errorf("status --all --json row of %s: %+v, want running (endpoint), Hermes running pid %s, service user %s", p, *r, gw[p], unitFile(p))
		case r.Status == nil || r.Status.Child == nil || strconv.Itoa(r.Status.Supervisor.PID) != sup[p] || strconv.Itoa(r.Status.Child.PID) != gw[p]:
			t.Errorf("status --all --json row of %s: status %+v, want supervisor %s (the unit's MainPID) with child %s", p, r.Status, sup[p], gw[p])
		case !runsProfile(r.Status.Child.Argv, p):
			t.Errorf("status --all --json row of %s: the child's argv %q, want hermes -p %s gateway run", p, r.Status.Child.Argv, p)
		}
	}
	t.Logf("%v: both active, status --all shows both", time.Since(began))

	// A killed gateway is restarted by its own supervisor; the other
	// profile's supervisor and gateway carry on untouched.
	m.must("kill", "-KILL", gw["work"])
	m.waitUnit(user, unitOf("work"), 20*time.Second, "a new gateway for work", func(props map[string]string) bool {
		g := m.gatewayPID(homes["work"])
		return active(props) && g != "" && g != gw["work"]
	}, "ActiveState")
	for _, p := range profiles {
		if got := m.show(user, unitOf(p), "MainPID")["MainPID"]; got != sup[p] {
			t.Errorf("%s's supervisor changed (%s -> %s) when only work's gateway was killed", p, sup[p], got)
		}
	}
	if got := m.gatewayPID(homes["family"]); got != gw["family"] {
		t.Errorf("family's gateway changed (%s -> %s) when work's was killed", gw["family"], got)
	}
	gw["work"] = m.gatewayPID(homes["work"])
	m.checkProfileGateway(gw["work"], "work", homes["work"])
	if n := m.gateways(); n != 2 {
		t.Errorf("%d gateways after work's was killed, want 2", n)
	}
	t.Logf("%v: a killed gateway restarted only its own profile's", time.Since(began))

	// Stopping one profile leaves the other running.
	mustAs("hermes-supervisor", "-p", "work", "stop")
	if props := m.show(user, unitOf("work"), "ActiveState", "Result"); props["ActiveState"] != "inactive" || props["Result"] != "success" {
		t.Errorf("%s after hermes-supervisor -p work stop: %v", unitOf("work"), props)
	}
	if props := m.show(user, unitOf("family"), "ActiveState", "MainPID"); !active(props) || props["MainPID"] != sup["family"] {
		t.Errorf("%s after work was stopped: %v, want active with its supervisor %s", unitOf("family"), props, sup["family"])
	}
	if got := m.gatewayPID(homes["family"]); got != gw["family"] {
		t.Errorf("family's gateway changed (%s -> %s) when work was stopped", gw["family"], got)
	}
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after work was stopped, want family's alone", n)
	}
	if _, err := as("hermes-supervisor", "-p", "work", "status"); exitCode(err) != 3 {
		t.Errorf("status -p work after its stop: exit %d, want 3", exitCode(err))
	}
	if _, err := as("hermes-supervisor", "-p", "family", "status"); exitCode(err) != 0 {
		t.Errorf("status -p family after work's stop: exit %d, want 0", exitCode(err))
	}
	rows = m.statusAll(user)
	if r := rows["work"]; r == nil || r.Supervised == "running" || r.Hermes != "stopped" {
		t.Errorf("status --all --json row of work after its stop: %+v, want its gateway stopped", r)
	}
	if r := rows["family"]; r == nil || r.Supervised != "running" || strconv.Itoa(r.HermesPID) != gw["family"] {
		t.Errorf("status --all --json row of family after work's stop: %+v, want running pid %s", r, gw["family"])
	}

	// Uninstalling one profile leaves the other's unit, running.
	mustAs("hermes-supervisor", "-p", "work", "uninstall")
	if props := m.show(user, unitOf("work"), "LoadState"); props["LoadState"] != "not-found" {
		t.Errorf("%s after hermes-supervisor -p work uninstall: %v", unitOf("work"), props)
	}
	if _, err := m.exec(5*time.Second, "test", "-e", unitFile("work")); err == nil {
		t.Errorf("%s is left after work's uninstall", unitFile("work"))
	}
	if _, err := m.exec(5*time.Second, "test", "-f", unitFile("family")); err != nil {
		t.Errorf("%s is gone after work's uninstall", unitFile("family"))
	}
	if props := m.show(user, unitOf("family"), "ActiveState", "MainPID", "UnitFileState"); !active(props) || props["MainPID"] != sup["family"] || props["UnitFileState"] != "enabled" {
		t.Errorf("%s after work's uninstall: %v, want active and enabled with its supervisor %s", unitOf("family"), props, sup["family"])
	}
	mustAs("hermes-supervisor", "-p", "family", "uninstall")
	if props := m.show(user, unitOf("family"), "LoadState"); props["LoadState"] != "not-found" {
		t.Errorf("%s after its uninstall: %v", unitOf("family"), props)
	}
	if n := m.gateways(); n != 0 {
		t.Errorf("%d gateways left after both profiles were uninstalled", n)
	}
	t.Logf("%v: stop and uninstall of one profile left the other", time.Since(began))
}

// checkProfileGateway checks that the gateway pid runs for profile p:
// `hermes -p p gateway run` on its argv, as Hermes' scoped readers look
// for it, and p's home as its HERMES_HOME.
func (m *machine) checkProfileGateway(pid, p, home string) {
	m.t.Helper()
	argv := strings.Split(strings.TrimSuffix(m.must("cat", "/proc/"+pid+"/cmdline"), "\x00"), "\x00")
	if !runsProfile(argv, p) {
		m.t.Errorf("the gateway %s of %s runs %q, want hermes -p %s gateway run", pid, p, argv, p)
	}
	environ := strings.Split(m.must("cat", "/proc/"+pid+"/environ"), "\x00")
	if !slices.Contains(environ, "HERMES_HOME="+home) {
		m.t.Errorf("the gateway %s of %s has no HERMES_HOME=%s in its environment: %q", pid, p, home, environ)
	}
}

// runsProfile reports whether argv runs `gateway run` for profile p as
// Hermes' units do: -p p right before gateway run. The stand-in hermes
// is a script, so the supervisor may record it before or after its exec
// of the demo gateway; both carry the words.
func runsProfile(argv []string, p string) bool {
	want := []string{"-p", p, "gateway", "run"}
	for i := range argv {
		if slices.Equal(argv[i:min(i+len(want), len(argv))], want) {
			return true
		}
	}
	return false
}

// statusAll runs `status --all --json` as user and returns its rows by
// profile.
func (m *machine) statusAll(user string) map[string]*profileRow {
	m.t.Helper()
	// Only stdout is JSON; its exit status is the worst home's.
	out, _ := m.execAs(user, 60*time.Second, "sh", "-c", `hermes-supervisor status --all --json 2>/dev/null`)
	var rows []profileRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		m.t.Fatalf("status --all --json: %v\n%s", err, out)
	}
	byName := map[string]*profileRow{}
	for i := range rows {
		byName[rows[i].Profile] = &rows[i]
	}
	return byName
}
