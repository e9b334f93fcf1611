package systemdtest

import (
	"os/exec"
	"path/filepath"
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

// TestSystemUnit installs the system unit as root and checks that systemd
// sees what the supervisor does: active only once the gateway runs, its
// state as StatusText, a stop within TimeoutStopSec that leaves nothing.
func TestSystemUnit(t *testing.T) {
	requireHost(t)
	bin := build(t)
	began := time.Now()
	m := boot(t, bin)
	t.Logf("booted in %v", time.Since(began))
	const home = "/var/lib/hermes"
	sup := []string{"hermes-supervisor", "--home", home, "--lock-dir", home + "/locks"}

	m.must(append(sup, "install", "--system", "--demo", "--wait", "30s")...)
	p := m.show("", unit, "ActiveState", "SubState", "StatusText", "MainPID", "ControlGroup", "TimeoutStopUSec", "Type")
	if p["ActiveState"] != "active" || p["Type"] != "notify" {
		t.Fatalf("after install: %v", p)
	}
	if !strings.HasPrefix(p["StatusText"], "running: ") {
		t.Errorf("StatusText = %q, want the supervisor's state running", p["StatusText"])
	}
	m.must("test", "-s", home+"/gateway.pid")
	if _, err := m.exec(10*time.Second, append(sup, "status")...); exitCode(err) != 0 {
		t.Errorf("status while running: exit %d, want 0", exitCode(err))
	}

	stopStart := time.Now()
	m.must("systemctl", "stop", unit)
	took := time.Since(stopStart)
	p = m.show("", unit, "ActiveState", "Result", "ControlGroup", "TimeoutStopUSec")
	if p["ActiveState"] != "inactive" || p["Result"] != "success" {
		t.Errorf("after systemctl stop: %v, want inactive with Result=success", p)
	}
	if out, _ := m.exec(5*time.Second, "cat", "/sys/fs/cgroup/system.slice/"+unit+"/cgroup.procs"); strings.TrimSpace(out) != "" && !strings.Contains(out, "No such file") {
		t.Errorf("the unit's cgroup still holds %q after stop", out)
	}
	if limit, err := time.ParseDuration(strings.ReplaceAll(p["TimeoutStopUSec"], "min ", "m")); err == nil && took >= limit {
		t.Errorf("systemctl stop took %v, TimeoutStopSec is %v", took, limit)
	}
	if _, err := m.exec(10*time.Second, append(sup, "status")...); exitCode(err) != 3 {
		t.Errorf("status after stop: exit %d, want 3", exitCode(err))
	}

	m.must(append(sup, "uninstall")...)
	if p := m.show("", unit, "LoadState"); p["LoadState"] != "not-found" {
		t.Errorf("after uninstall: %v", p)
	}
	t.Logf("system unit checks took %v", time.Since(began))
}
