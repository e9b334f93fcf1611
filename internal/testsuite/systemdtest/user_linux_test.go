package systemdtest

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// checkGatewayCgroup checks that the gateway of home runs in the cgroup
// at path.
func (m *machine) checkGatewayCgroup(home, path string) {
	m.t.Helper()
	gw := m.gatewayPID(home)
	out, err := m.exec(5*time.Second, "cat", "/proc/"+gw+"/cgroup")
	// The host's cgroup v1 hierarchies, if any, are listed too: the 0::
	// line is the container's cgroup v2.
	if err != nil || !slices.Contains(strings.Split(out, "\n"), "0::"+path) {
		m.t.Errorf("the gateway %s of %s runs in cgroups %q (%v), want %s", gw, home, out, err, path)
	}
}

// TestUserUnitAndSudo installs a user unit for a lingering user, then the
// system unit through sudo as that user would: the unit must run as them,
// with their home, lock dir and login PATH (where their hermes is).
func TestUserUnitAndSudo(t *testing.T) {
	requireHost(t)
	t.Parallel()
	bin := build(t)
	began := time.Now()
	m := boot(t, bin)
	const user = "alice"
	uid := m.lingeringUser(user)

	// The user's own hermes, on the PATH their login sets (Debian's
	// ~/.profile adds ~/.local/bin), not on root's or sudo's.
	m.must("sh", "-c", `mkdir -p /home/alice/.local/bin && printf '#!/bin/sh\nexec /usr/local/bin/hermes-supervisor demo-gateway "$@"\n' >/home/alice/.local/bin/hermes &&
chmod 755 /home/alice/.local/bin/hermes && chown -R alice: /home/alice/.local`)

	as := func(argv ...string) (string, error) { return m.execAs(user, 30*time.Second, argv...) }
	mustAs := func(argv ...string) string {
		t.Helper()
		out, err := as(argv...)
		if err != nil {
			t.Fatalf("as %s: %s: %v\n%s", user, strings.Join(argv, " "), err, out)
		}
		return out
	}

	out := mustAs("hermes-supervisor", "install", "--demo")
	if strings.Contains(out, "enable-linger") {
		t.Errorf("install printed the lingering hint with lingering on:\n%s", out)
	}
	p := m.show(user, unit, "ActiveState", "StatusText")
	if !active(p) || !strings.HasPrefix(p["StatusText"], "running: ") {
		t.Errorf("user unit after install: %v", p)
	}
	if _, err := as("hermes-supervisor", "status"); exitCode(err) != 0 {
		t.Errorf("status while running: exit %d, want 0", exitCode(err))
	}
	// A user manager marks no cgroup delegated: its own word for the unit
	// is what gives the gateway a cgroup of its own.
	m.checkGatewayCgroup("/home/alice/.hermes", "/user.slice/user-"+uid+".slice/user@"+uid+".service/app.slice/"+unit+"/gateway")
	// systemd brings a killed supervisor back in the user manager too.
	supPID := m.show(user, unit, "MainPID")["MainPID"]
	m.must("kill", "-KILL", supPID)
	m.waitUnit(user, unit, 20*time.Second, "a new supervisor", func(p map[string]string) bool {
		return active(p) && p["MainPID"] != supPID && p["MainPID"] != "0"
	}, "ActiveState", "MainPID")
	if n := m.gateways(); n != 1 {
		t.Errorf("%d gateways after the user's supervisor was killed, want 1", n)
	}
	mustAs("hermes-supervisor", "stop")
	if p := m.show(user, unit, "ActiveState", "Result"); p["ActiveState"] != "inactive" || p["Result"] != "success" {
		t.Errorf("user unit after stop: %v", p)
	}
	if _, err := as("hermes-supervisor", "status"); exitCode(err) != 3 {
		t.Errorf("status after stop: exit %d, want 3", exitCode(err))
	}
	mustAs("hermes-supervisor", "start")
	if p := m.show(user, unit, "ActiveState"); !active(p) {
		t.Errorf("user unit after start: %v", p)
	}
	mustAs("hermes-supervisor", "uninstall")
	if p := m.show(user, unit, "LoadState"); p["LoadState"] != "not-found" {
		t.Errorf("user unit after uninstall: %v", p)
	}
	t.Logf("%v: user unit", time.Since(began))

	// A unit that cannot run fails the install, with its journal lines.
	out, err := as("hermes-supervisor", "--home", "/root/hermes", "install", "--demo", "--wait", "20s")
	if exitCode(err) == 0 || !strings.Contains(out, "the service is not running") || !strings.Contains(out, "/root/hermes") {
		t.Errorf("install of a unit that cannot start: exit %d, want non-zero with its log lines:\n%s", exitCode(err), out)
	}
	t.Logf("install of a unit that cannot start says:\n%s", out)
	mustAs("hermes-supervisor", "uninstall")

	// sudo as a user types it: no --demo, so hermes must be found on
	// alice's PATH; the unit runs as alice in alice's home.
	m.must("sh", "-c", `echo 'alice ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/alice && chmod 440 /etc/sudoers.d/alice`)
	// Hermes' own user unit runs alice's gateway: the system install
	// with --migrate must disable it in her user manager.
	mustAs("sh", "-c", `mkdir -p ~/.config/systemd/user && printf '[Service]\nExecStart=/usr/local/bin/hermes-supervisor demo-gateway\n[Install]\nWantedBy=default.target\n' >~/.config/systemd/user/hermes-gateway.service &&
systemctl --user daemon-reload && systemctl --user enable --now hermes-gateway.service`)
	out = mustAs("sudo", "-n", "hermes-supervisor", "install", "--system", "--migrate", "--wait", "20s")
	if p := m.show(user, "hermes-gateway.service", "ActiveState", "UnitFileState"); p["ActiveState"] == "active" || p["UnitFileState"] != "disabled" {
		t.Errorf("alice's Hermes unit after sudo install --system --migrate: %v\n%s", p, out)
	}
	p = m.show("", unit, "ActiveState", "User", "Environment", "ExecStart")
	if !active(p) || p["User"] != user {
		t.Fatalf("system unit installed with sudo: %v\n%s", p, out)
	}
	for _, want := range []string{"HERMES_HOME=/home/alice/.hermes", "/home/alice/.local/bin"} {
		if !strings.Contains(p["Environment"], want) {
			t.Errorf("the unit's environment lacks %s: %s", want, p["Environment"])
		}
	}
	if !strings.Contains(p["ExecStart"], "--lock-dir /home/alice/.local/state/hermes/gateway-locks") {
		t.Errorf("the unit's lock dir is not alice's: %s", p["ExecStart"])
	}
	if m.gatewayPID("/home/alice/.hermes") == "" {
		t.Errorf("no gateway.pid in alice's home")
	}
	// Run as alice, the supervisor reads the user.delegate mark (trusted.*
	// is root's to read) on the cgroup systemd gave her.
	m.checkGatewayCgroup("/home/alice/.hermes", "/system.slice/"+unit+"/gateway")
	if out := mustAs("ps", "-o", "user=", "-p", m.gatewayPID("/home/alice/.hermes")); strings.TrimSpace(out) != user {
		t.Errorf("the gateway runs as %q, want %s", strings.TrimSpace(out), user)
	}
	// Under sudo, stop, start and uninstall are about the system unit,
	// and find it for alice's home.
	mustAs("sudo", "-n", "hermes-supervisor", "stop")
	if p := m.show("", unit, "ActiveState", "Result"); p["ActiveState"] != "inactive" || p["Result"] != "success" {
		t.Errorf("system unit after sudo hermes-supervisor stop: %v", p)
	}
	mustAs("sudo", "-n", "hermes-supervisor", "start")
	if p := m.show("", unit, "ActiveState"); !active(p) {
		t.Errorf("system unit after sudo hermes-supervisor start: %v", p)
	}
	// Without sudo, alice stops it through its control endpoint. stop
	// returns once the supervisor has exited; systemd then reaps it and
	// marks the unit inactive on its own time.
	sup := m.show("", unit, "MainPID")["MainPID"]
	mustAs("hermes-supervisor", "stop")
	// One read of its stat: gone (systemd reaped it, perhaps between a
	// look and a read) or a zombie is an exited supervisor. A test then a
	// read raced systemd's reaping and failed on a supervisor long gone.
	if out, err := m.exec(10*time.Second, "sh", "-c", `s=$(cat /proc/$0/stat 2>/dev/null) || exit 0; s=${s##*) }; [ "${s%% *}" = Z ]`, sup); err != nil {
		t.Errorf("the supervisor, pid %s, still runs after alice's hermes-supervisor stop returned: %v\n%s", sup, err, out)
	}
	m.waitUnit("", unit, 10*time.Second, "inactive after alice's hermes-supervisor stop", func(p map[string]string) bool {
		return p["ActiveState"] == "inactive"
	}, "ActiveState")
	mustAs("sudo", "-n", "hermes-supervisor", "uninstall")
	if p := m.show("", unit, "LoadState"); p["LoadState"] != "not-found" {
		t.Errorf("system unit after sudo uninstall: %v", p)
	}
	t.Logf("%v: user unit and sudo install --system", time.Since(began))
}
