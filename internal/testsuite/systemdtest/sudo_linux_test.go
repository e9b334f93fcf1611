package systemdtest

import (
	"strings"
	"testing"
	"time"
)

// TestSudoInstallPlantedValues is issue 23's local root, tried under a real
// systemd: a user whose only sudo right is `hermes-supervisor install
// --system` plants a value holding a line break (in their config file, in
// their login profile's PATH, or in HERMES_HOME kept by sudo -E), so that
// the root-owned unit gains `ExecStartPre=+` running their script as root.
// Each attempt must fail with one line naming the value's source, write no
// unit, and never run the script.
func TestSudoInstallPlantedValues(t *testing.T) {
	m := mallory(t)
	// The payload, which records who ran it.
	m.must("sh", "-c", `printf '#!/bin/sh\nid -u >>`+sentinel+`\n' >/home/mallory/pwn.sh &&
chmod 755 /home/mallory/pwn.sh && cp /home/mallory/.profile /home/mallory/.profile.orig && chown -R mallory: /home/mallory`)
	const payload = `ExecStartPre=+/home/mallory/pwn.sh`
	const config = "/home/mallory/.hermes/hermes-supervisor.json"
	sudo := []string{"sudo", "-n", "/usr/local/bin/hermes-supervisor", "install", "--system"}
	for _, tc := range []struct {
		name, plant string // plant runs as mallory, with $P the payload
		argv        []string
		source      string
	}{
		{"config home, newline", `printf '{"home": "/home/mallory/h\\n%s"}' "$P" >` + config, sudo, "config file " + config + `, key "home"`},
		{"config home, carriage return", `printf '{"home": "/home/mallory/h\\r%s"}' "$P" >` + config, sudo, "config file " + config + `, key "home"`},
		{"config home, U+2028", `printf '{"home": "/home/mallory/h\\u2028%s"}' "$P" >` + config, sudo, "config file " + config + `, key "home"`},
		// systemd drops an Environment= line holding a noncharacter, raw or
		// escaped, and the service ran without HERMES_HOME.
		{"config home, U+FFFF", `printf '{"home": "/home/mallory/h\\uffff%s"}' "$P" >` + config, sudo, "config file " + config + `, key "home"`},
		{"config lock_dir, newline", `printf '{"lock_dir": "/home/mallory/l\\n%s"}' "$P" >` + config, sudo, "config file " + config + `, key "lock_dir"`},
		{"login PATH entry, carriage return", `printf 'PATH="$PATH:/home/mallory/b\r%s"\n' "$P" >>~/.profile`, sudo, "mallory's login shell"},
		{"HERMES_HOME kept by sudo -E, newline", `true`,
			[]string{"sh", "-c", `HERMES_HOME="$(printf '/home/mallory/h\n` + payload + `')" exec sudo -E -n /usr/local/bin/hermes-supervisor install --system`},
			"the environment variable HERMES_HOME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := m.execAs(user, 10*time.Second, "sh", "-c", `rm -f `+config+` && cp ~/.profile.orig ~/.profile && P='`+payload+`' && `+tc.plant); err != nil {
				t.Fatalf("plant: %v\n%s", err, out)
			}
			out, err := m.execAs(user, 120*time.Second, tc.argv...)
			msg := strings.TrimSpace(out)
			if exitCode(err) == 0 || strings.Contains(msg, "\n") || !strings.Contains(msg, "unsafe value for a service definition") || !strings.Contains(msg, tc.source) {
				t.Errorf("sudo install --system with a planted value: exit %d, want non-zero with one line naming %s:\n%s", exitCode(err), tc.source, out)
			}
			if pwned, err := m.exec(5*time.Second, "cat", sentinel); err == nil {
				t.Errorf("the planted script ran as uid %s: %s", strings.TrimSpace(pwned), out)
			}
			if written, err := m.exec(5*time.Second, "cat", "/etc/systemd/system/"+unit); err == nil {
				t.Errorf("a unit was written:\n%s", written)
			}
			// Leave the next attempt a clean machine, whatever this one did.
			_, _ = m.exec(60*time.Second, "sh", "-c", `systemctl disable --now `+unit+`; rm -f /etc/systemd/system/`+unit+` `+sentinel+`; systemctl daemon-reload; systemctl reset-failed`)
		})
	}
}

// TestSudoInstallPlantedTools is the same user with the same right (SETENV
// included) putting a directory of their own first on PATH on sudo's
// command line, where secure_path does not reach, holding a systemctl and
// an su that record who ran them and then hand over to the real ones.
// Install runs both as root; it must run root's own, and still install.
func TestSudoInstallPlantedTools(t *testing.T) {
	m := mallory(t)
	m.must("sh", "-c", `mkdir -p /home/mallory/evil &&
for tool in systemctl su journalctl; do
  printf '#!/bin/sh\necho "%s $(id -u)" >>`+sentinel+`\nexec /usr/bin/%s "$@"\n' $tool $tool >/home/mallory/evil/$tool
done &&
chmod 755 /home/mallory/evil/* && chown -R mallory: /home/mallory`)
	t.Cleanup(func() {
		_, _ = m.exec(60*time.Second, "sh", "-c", `systemctl disable --now `+unit+`; rm -f /etc/systemd/system/`+unit)
	})
	out, err := m.execAs(user, 120*time.Second, "sudo", "-n", "PATH=/home/mallory/evil:/usr/bin:/bin",
		"/usr/local/bin/hermes-supervisor", "install", "--system")
	if ran, rerr := m.exec(5*time.Second, "cat", sentinel); rerr == nil {
		t.Errorf("install ran mallory's tools (tool, uid):\n%s", ran)
	}
	if err != nil {
		t.Fatalf("sudo install --system with mallory's PATH: %v\n%s", err, out)
	}
	if active, err := m.exec(10*time.Second, "systemctl", "is-active", unit); err != nil || strings.TrimSpace(active) != "active" {
		t.Errorf("the service is %q (%v) after install: root's systemctl should have started it\n%s", strings.TrimSpace(active), err, out)
	}
}

// The attacker of these tests, and where her payloads record who ran them.
const (
	user     = "mallory"
	sentinel = "/run/hermes-pwned"
)

// mallory boots a machine where mallory's only sudo right is exactly
// `hermes-supervisor install --system`, with SETENV, which lets sudo keep
// her environment and take variables on its command line: the most a
// careless rule would allow. A hermes on her login PATH lets install get
// as far as rendering the unit.
func mallory(t *testing.T) *machine {
	requireHost(t)
	t.Parallel()
	m := boot(t, build(t))
	m.must("useradd", "-m", user)
	m.must("sh", "-c", `echo 'mallory ALL=(root) NOPASSWD:SETENV: /usr/local/bin/hermes-supervisor install --system' >/etc/sudoers.d/mallory && chmod 440 /etc/sudoers.d/mallory`)
	m.must("sh", "-c", `mkdir -p /home/mallory/.local/bin /home/mallory/.hermes &&
printf '#!/bin/sh\nexec /usr/local/bin/hermes-supervisor demo-gateway "$@"\n' >/home/mallory/.local/bin/hermes &&
chmod 755 /home/mallory/.local/bin/hermes && chown -R mallory: /home/mallory`)
	return m
}
