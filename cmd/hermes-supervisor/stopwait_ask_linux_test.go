package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/service"
)

// TestServiceStopAsksHowLongOnce: a stop or uninstall of an installed
// service asks the running supervisor once how long its stop may take
// (the wait the Windows SCM's stop uses; systemd keeps its own), and a
// stop with --timeout asks nothing.
func TestServiceStopAsksHowLongOnce(t *testing.T) {
	env := askEnv(t)
	unit := service.Systemd{}.UnitPath(service.Config{UserHome: env["HOME"]})
	if err := os.MkdirAll(filepath.Dir(unit), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, fmt.Appendf(nil, "[Service]\nEnvironment=HERMES_HOME=%s\n", env["HERMES_HOME"]), 0o600); err != nil {
		t.Fatal(err)
	}
	checkAsks(t, env, []askCase{
		{[]string{"stop", "--dry-run"}, "systemctl --user stop", 1},
		{[]string{"stop", "--dry-run", "--timeout", "5s"}, "systemctl --user stop", 0},
		{[]string{"uninstall", "--dry-run"}, "systemctl --user disable", 1},
		{[]string{"start", "--dry-run"}, "systemctl --user start", 0},
	})
}
