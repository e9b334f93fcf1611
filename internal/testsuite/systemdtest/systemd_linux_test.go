package systemdtest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const unit = "hermes-supervisor.service"

// build compiles the shipped binary (no race detector: it is what users
// run, and it starts quicker).
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hermes-supervisor")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hermes-agent/hermes-supervisor/cmd/hermes-supervisor")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func active(p map[string]string) bool { return p["ActiveState"] == "active" }

// gatewayPID reads the pid the gateway wrote into home's gateway.pid; 0
// while there is none.
func (m *machine) gatewayPID(home string) string {
	out, err := m.exec(5*time.Second, "cat", home+"/gateway.pid")
	if err != nil {
		return ""
	}
	if g := pidField.FindStringSubmatch(out); g != nil {
		return g[1]
	}
	return ""
}

var pidField = regexp.MustCompile(`"pid":\s*(\d+)`)

// systemCgroup is the system unit's cgroup in the container.
const systemCgroup = "/sys/fs/cgroup/system.slice/" + unit

// checkCgroup checks that the unit's cgroup (dir) holds the supervisor
// alone in supervisor/, the gateway and its one helper in gateway/, and no
// process anywhere else, and returns the helper's pid.
func (m *machine) checkCgroup(dir, supPID, gw string) string {
	m.t.Helper()
	out := m.must("sh", "-c", `cd "$1" && find . -name cgroup.procs | while read f; do echo "${f%/cgroup.procs}" $(cat "$f"); done`, "sh", dir)
	helper := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch pids := f[1:]; {
		case f[0] == "./supervisor" && len(pids) == 1 && pids[0] == supPID:
		case f[0] == "./gateway" && len(pids) == 2 && (pids[0] == gw || pids[1] == gw):
			helper = pids[0]
			if helper == gw {
				helper = pids[1]
			}
		case len(pids) == 0:
		default:
			m.t.Errorf("cgroup %s%s holds %v; want the supervisor %s alone in supervisor/, the gateway %s and one helper in gateway/:\n%s",
				dir, strings.TrimPrefix(f[0], "."), pids, supPID, gw, out)
		}
	}
	if helper == "" {
		m.t.Errorf("no gateway %s with one helper in %s/gateway:\n%s", gw, dir, out)
	}
	return helper
}

// checkHelperGone checks that the helper of the gateway before is dead
// (gone, or a zombie its new parent has yet to reap).
func (m *machine) checkHelperGone(helper, after string) {
	m.t.Helper()
	if helper == "" {
		return // checkCgroup found none, and said so
	}
	out, err := m.exec(5*time.Second, "cat", "/proc/"+helper+"/stat")
	if err == nil && !regexp.MustCompile(`\) [ZX] `).MatchString(out) {
		m.t.Errorf("the old gateway's helper %s still runs after %s: %s", helper, after, out)
	}
}

// gateways counts the demo gateways running in the container.
func (m *machine) gateways() int {
	out, _ := m.exec(5*time.Second, "pgrep", "-fc", "hermes-supervisor demo-gateway")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// TestSystemUnit installs the system unit as root over Hermes' own running
// unit (--migrate) and checks that systemd sees what the supervisor does:
// active only once the gateway runs, its state as StatusText, a killed
// gateway or supervisor brought back (with exactly one gateway), the CLI's
// stop, start and restart, status exit codes, our journal lines, and a stop
// within TimeoutStopSec that leaves nothing.
func TestSystemUnit(t *testing.T) {
	requireHost(t)
	t.Parallel()
	bin := build(t)
	began := time.Now()
	m := boot(t, bin)
	t.Logf("booted in %v", time.Since(began))
	const home = "/var/lib/hermes"
	sup := []string{"hermes-supervisor", "--home", home, "--lock-dir", home + "/locks"}

	// Hermes' own unit runs the gateway of this home (it says so with
	// HERMES_HOME, as Hermes' units do); --migrate takes over.
	m.must("mkdir", "-p", home)
	m.must("sh", "-c", `cat >/etc/systemd/system/hermes-gateway.service <<'E'
[Service]
ExecStart=/usr/local/bin/hermes-supervisor demo-gateway --home `+home+` --lock-dir `+home+`/locks
Environment=HERMES_HOME=`+home+`
Restart=always
[Install]
WantedBy=multi-user.target
E
systemctl daemon-reload && systemctl enable --now hermes-gateway.service`)
	// The gateway takes a while to be ready, so that "active" can be seen
	// to wait for it. It first starts a helper in a session of its own
	// that holds its stdout, as a setsid'd tool of Hermes' would: only the
	// gateway's cgroup can take that down with it.
	m.must("sh", "-c", `echo '{"command": ["/bin/sh", "-c", "setsid sleep 86400 & exec /usr/local/bin/hermes-supervisor demo-gateway -ready-delay 300ms"]}' >`+home+`/hermes-supervisor.json`)
	out := m.must(append(sup, "install", "--system", "--migrate", "--wait", "0")...)
	if !strings.Contains(out, "disabling Hermes' own unit hermes-gateway.service") {
		t.Errorf("install --migrate did not say it disables Hermes' unit:\n%s", out)
	}
	if p := m.show("", "hermes-gateway.service", "ActiveState", "UnitFileState"); (p["ActiveState"] != "inactive" && p["ActiveState"] != "failed") || p["UnitFileState"] != "disabled" {
		t.Errorf("Hermes' own unit after --migrate: %v, want stopped and disabled", p)
	}
	sawActivating := false
	m.waitUnit("", unit, 20*time.Second, "active", func(p map[string]string) bool {
		if p["ActiveState"] == "activating" {
			sawActivating = true
		}
		if p["ActiveState"] == "active" && m.gatewayPID(home) == "" {
			t.Fatalf("active before the gateway wrote its pid file: %v", p)
		}
		return active(p)
	}, "ActiveState")
	if !sawActivating {
		t.Errorf("never saw the unit activating while the gateway was getting ready")
	}
	p := m.show("", unit, "StatusText", "MainPID", "Type")
	if !strings.HasPrefix(p["StatusText"], "running: ") || p["Type"] != "notify" {
		t.Errorf("StatusText = %q, Type = %q: want the supervisor's state running, Type=notify", p["StatusText"], p["Type"])
	}
	if out, err := m.exec(10*time.Second, append(sup, "status")...); exitCode(err) != 0 || !strings.Contains(out, "\ncgroup:     "+systemCgroup+"/gateway\n") {
		t.Errorf("status while running: exit %d, want 0, and a line naming the gateway's cgroup:\n%s", exitCode(err), out)
	}

	t.Logf("%v: installed over Hermes' unit, active after READY", time.Since(began))
	// A killed gateway is restarted by the supervisor, which stays; the
	// helper it left goes with it, and only the new one's runs.
	supPID, gw := p["MainPID"], m.gatewayPID(home)
	helper := m.checkCgroup(systemCgroup, supPID, gw)
	var st struct {
		Child struct {
			PID    int    `json:"pid"`
			Cgroup string `json:"cgroup"`
		} `json:"child"`
	}
	if err := json.Unmarshal([]byte(m.must(append(append([]string{"sh", "-c", `"$@" 2>/dev/null`, "sh"}, sup...), "status", "--json")...)), &st); err != nil ||
		strconv.Itoa(st.Child.PID) != gw || st.Child.Cgroup != systemCgroup+"/gateway" {
		t.Errorf("status --json: child %+v (%v), want the gateway %s in %s/gateway", st.Child, err, gw, systemCgroup)
	}
	m.must("kill", "-KILL", gw)
	m.waitUnit("", unit, 20*time.Second, "a new gateway", func(p map[string]string) bool {
		g := m.gatewayPID(home)
		return active(p) && g != "" && g != gw
	}, "ActiveState")
	if p := m.show("", unit, "MainPID"); p["MainPID"] != supPID {
		t.Errorf("the supervisor changed (%s -> %s) when only the gateway was killed", supPID, p["MainPID"])
	}
	m.checkHelperGone(helper, "the gateway was killed")
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after the gateway was killed, want 1", n)
	}
	helper = m.checkCgroup(systemCgroup, supPID, m.gatewayPID(home))
	if out := m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit); !strings.Contains(out, "each gateway runs in a cgroup of its own") ||
		!strings.Contains(out, "killed what the exited gateway left in its cgroup") {
		t.Errorf("the journal does not say the gateway has a cgroup, or that its helper was killed:\n%s", out)
	}

	t.Logf("%v: gateway SIGKILL survived", time.Since(began))
	// A killed supervisor is restarted by systemd, with exactly one gateway.
	m.must("kill", "-KILL", supPID)
	m.waitUnit("", unit, 20*time.Second, "a new supervisor", func(p map[string]string) bool {
		return active(p) && p["MainPID"] != supPID && p["MainPID"] != "0"
	}, "ActiveState", "MainPID", "NRestarts")
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after the supervisor was killed and restarted, want 1", n)
	}
	// systemd took the rest of the unit's cgroup, helper included, before
	// it started the new supervisor.
	m.checkHelperGone(helper, "the supervisor was killed")

	t.Logf("%v: supervisor SIGKILL survived", time.Since(began))
	// The CLI: stop goes through systemd, start waits for READY, restart
	// restarts the gateway.
	m.must(append(sup, "stop")...)
	if p := m.show("", unit, "ActiveState", "Result"); p["ActiveState"] != "inactive" || p["Result"] != "success" {
		t.Errorf("after hermes-supervisor stop: %v", p)
	}
	if _, err := m.exec(10*time.Second, append(sup, "status")...); exitCode(err) != 3 {
		t.Errorf("status after stop: exit %d, want 3", exitCode(err))
	}
	m.must(append(sup, "start")...)
	if p := m.show("", unit, "ActiveState"); !active(p) || m.gatewayPID(home) == "" {
		t.Errorf("after hermes-supervisor start: %v, gateway pid %q", p, m.gatewayPID(home))
	}
	gw = m.gatewayPID(home)
	supPID = m.show("", unit, "MainPID")["MainPID"]
	helper = m.checkCgroup(systemCgroup, supPID, gw)
	m.must(append(sup, "restart")...)
	m.waitUnit("", unit, 20*time.Second, "a new gateway after restart", func(p map[string]string) bool {
		g := m.gatewayPID(home)
		return active(p) && g != "" && g != gw
	}, "ActiveState")
	m.checkHelperGone(helper, "hermes-supervisor restart")
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after hermes-supervisor restart, want 1", n)
	}
	m.checkCgroup(systemCgroup, supPID, m.gatewayPID(home))

	t.Logf("%v: CLI stop, start, restart", time.Since(began))
	// Our lines reach the journal over its native protocol: no second
	// timestamp in the text, and the fields as journal fields.
	out = m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit, "SYSLOG_IDENTIFIER=hermes-supervisor")
	if !strings.Contains(out, "supervising {") {
		t.Errorf("the journal has none of our lines:\n%s", out)
	}
	if stamped := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT`).FindString(out); stamped != "" {
		t.Errorf("our journal lines carry a timestamp of their own:\n%s", out)
	}
	if out := m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit, "TO=running"); !strings.Contains(out, "gateway is ready") {
		t.Errorf("journalctl TO=running finds no transition to running:\n%s", out)
	}

	// After a power loss the unit starts by itself at boot, and the
	// supervisor sweeps the files the killed gateway left.
	gw = m.gatewayPID(home)
	m.powerLoss()
	t.Logf("%v: rebooted after a power loss", time.Since(began))
	m.waitUnit("", unit, 20*time.Second, "active after the reboot", func(p map[string]string) bool {
		return active(p) && m.gatewayPID(home) != ""
	}, "ActiveState")
	if out := m.must("journalctl", "--no-pager", "-b", "-o", "cat", "-u", unit); !strings.Contains(out, "swept") || !strings.Contains(out, "gateway.pid") {
		t.Errorf("after the reboot the supervisor swept nothing (the old gateway was pid %s):\n%s", gw, out)
	}
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after the reboot, want 1", n)
	}

	stopStart := time.Now()
	m.must("systemctl", "stop", unit)
	took := time.Since(stopStart)
	p = m.show("", unit, "ActiveState", "Result", "TimeoutStopUSec")
	if p["ActiveState"] != "inactive" || p["Result"] != "success" {
		t.Errorf("after systemctl stop: %v, want inactive with Result=success", p)
	}
	if out, _ := m.exec(5*time.Second, "cat", "/sys/fs/cgroup/system.slice/"+unit+"/cgroup.procs"); strings.TrimSpace(out) != "" && !strings.Contains(out, "No such file") {
		t.Errorf("the unit's cgroup still holds %q after stop", out)
	}
	if n := m.gateways(); n != 0 {
		t.Errorf("%d gateways left after systemctl stop", n)
	}
	if limit, err := time.ParseDuration(strings.ReplaceAll(p["TimeoutStopUSec"], "min ", "m")); err == nil && took >= limit {
		t.Errorf("systemctl stop took %v, TimeoutStopSec is %v", took, limit)
	}

	m.must(append(sup, "uninstall")...)
	if p := m.show("", unit, "LoadState"); p["LoadState"] != "not-found" {
		t.Errorf("after uninstall: %v", p)
	}
	t.Logf("system unit checks took %v", time.Since(began))
}

// TestSystemUnitFromOddBinaryPath installs the system unit from a binary
// whose path holds a $, a %-specifier, a ; and spaces: systemd executes
// the program's path as the unit writes it (it expands variables in the
// arguments only), so a $ doubled there made the unit fail with status
// 203/EXEC. The supervisor systemd runs must be that very file.
func TestSystemUnitFromOddBinaryPath(t *testing.T) {
	requireHost(t)
	t.Parallel()
	m := boot(t, build(t))
	const dir, home = "/opt/a$b %i ;x", "/var/lib/hermes $odd %h"
	exe := dir + "/hermes-supervisor"
	m.must("mkdir", "-p", dir, home)
	m.must("cp", "/usr/local/bin/hermes-supervisor", exe)
	m.must(exe, "--home", home, "--lock-dir", home+"/locks", "install", "--system", "--demo", "--wait", "0")
	p := m.waitUnit("", unit, 20*time.Second, "active", active, "ActiveState", "Result", "ExecMainStatus", "MainPID")
	if got := strings.TrimSpace(m.must("readlink", "/proc/"+p["MainPID"]+"/exe")); got != exe {
		t.Errorf("systemd runs %q, want %q", got, exe)
	}
	if out, err := m.exec(10*time.Second, exe, "--home", home, "status"); exitCode(err) != 0 || !strings.Contains(out, "running") {
		t.Errorf("status of the home %q: exit %d, want 0 and running:\n%s", home, exitCode(err), out)
	}
}
