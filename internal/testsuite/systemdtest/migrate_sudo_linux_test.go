package systemdtest

import (
	"strings"
	"testing"
	"time"
)

// TestSudoMigrateSparesAnotherUsersGateway is review's attack on `sudo
// install --system --migrate` under a real systemd: mallory, whose sudo
// right is that command, names bob's Hermes home in her config file, where
// a gateway Hermes itself runs as bob proves itself by its own records.
// Hermes' own `gateway stop`, run as mallory, could not signal it; root,
// for her, must not either. Install fails with one line naming both uids,
// and bob's gateway runs on, with no planned-stop marker.
func TestSudoMigrateSparesAnotherUsersGateway(t *testing.T) {
	m := mallory(t)
	m.must("sh", "-c", `echo 'mallory ALL=(root) NOPASSWD:SETENV: /usr/local/bin/hermes-supervisor install --system --migrate' >>/etc/sudoers.d/mallory`)
	m.must("useradd", "-m", "bob")
	bob := m.uid("bob")
	m.must("sh", "-c", `mkdir -p /home/bob/.hermes && chown -R bob: /home/bob`)
	// A gateway Hermes runs as bob, in a unit of its own (not named as
	// Hermes' units are, so --migrate has no unit of it to disable).
	// systemd-run returns once it says READY=1, after it has written its
	// gateway.pid: no polling for the file.
	m.must("systemd-run", "--unit=bob-gateway", "--uid=bob", "--gid=bob", "-p", "Type=notify", "-p", "WatchdogSec=60",
		"--setenv=HOME=/home/bob", "--setenv=HERMES_HOME=/home/bob/.hermes",
		"/usr/local/bin/hermes-supervisor", "demo-gateway")
	pid := strings.TrimSpace(m.must("systemctl", "show", "-P", "MainPID", "bob-gateway"))
	if rec := m.must("cat", "/home/bob/.hermes/gateway.pid"); !strings.Contains(rec, `"pid": `+pid) && !strings.Contains(rec, `"pid":`+pid) {
		t.Fatalf("bob's gateway.pid does not name his gateway %s:\n%s", pid, rec)
	}
	m.must("sh", "-c", `printf '{"home": "/home/bob/.hermes"}' >/home/mallory/.hermes/hermes-supervisor.json && chown mallory: /home/mallory/.hermes/hermes-supervisor.json`)
	t.Cleanup(func() {
		_, _ = m.exec(60*time.Second, "sh", "-c", `systemctl disable --now `+unit+`; rm -f /etc/systemd/system/`+unit+`; systemctl stop bob-gateway`)
	})

	out, err := m.execAs(user, 120*time.Second, "sudo", "-n", "/usr/local/bin/hermes-supervisor", "install", "--system", "--migrate")
	mallory := m.uid(user)
	if exitCode(err) == 0 || !strings.Contains(out, "runs as uid "+bob+", not as uid "+mallory+", the user this service is for") {
		t.Errorf("sudo install --system --migrate over bob's home: exit %d, want non-zero naming uid %s and %s:\n%s", exitCode(err), bob, mallory, out)
	}
	if _, err := m.exec(5*time.Second, "kill", "-0", pid); err != nil {
		t.Errorf("bob's gateway %s is gone: root stopped it for mallory\n%s", pid, out)
	}
	if _, err := m.exec(5*time.Second, "test", "-e", "/home/bob/.hermes/.gateway-planned-stop.json"); err == nil {
		t.Errorf("a planned-stop marker was written into bob's home\n%s", out)
	}
}

// TestSudoMigrateStopsTheUsersOwnGateway is the case the attack above
// must leave working: mallory's own detached gateway in her own home is
// stopped as Hermes' own stop does, with the planned-stop marker written
// by root into her home, judged for her (safefs.WriteFileFor), and the
// service takes over.
func TestSudoMigrateStopsTheUsersOwnGateway(t *testing.T) {
	m := mallory(t)
	m.must("sh", "-c", `echo 'mallory ALL=(root) NOPASSWD:SETENV: /usr/local/bin/hermes-supervisor install --system --migrate' >>/etc/sudoers.d/mallory`)
	m.must("systemd-run", "--unit=mallory-gateway", "--uid=mallory", "--gid=mallory", "-p", "Type=notify", "-p", "WatchdogSec=60",
		"--setenv=HOME=/home/mallory", "--setenv=HERMES_HOME=/home/mallory/.hermes",
		"/usr/local/bin/hermes-supervisor", "demo-gateway")
	t.Cleanup(func() {
		_, _ = m.exec(60*time.Second, "sh", "-c", `systemctl disable --now `+unit+`; rm -f /etc/systemd/system/`+unit+`; systemctl stop mallory-gateway`)
	})
	out, err := m.execAs(user, 120*time.Second, "sudo", "-n", "/usr/local/bin/hermes-supervisor", "install", "--system", "--migrate")
	if exitCode(err) != 0 || !strings.Contains(out, "stopping Hermes' own gateway of the home") || strings.Contains(out, "could not write the planned-stop marker") {
		t.Errorf("sudo install --system --migrate over mallory's own gateway: exit %d, want 0, her gateway stopped after its planned-stop marker:\n%s", exitCode(err), out)
	}
	if p := m.show("", "mallory-gateway.service", "ActiveState"); p["ActiveState"] == "active" {
		t.Errorf("mallory's own gateway still runs after --migrate: %v\n%s", p, out)
	}
}
