package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/service"
)

// TestSystemdStopAsksNothing: how long the running supervisor says its
// stop may take is the wait of the Windows SCM's stop alone; systemd keeps
// its own (TimeoutStopSec), so a stop, uninstall or start of an installed
// unit never asks it, nor waits on a supervisor that cannot answer.
func TestSystemdStopAsksNothing(t *testing.T) {
	env := askEnv(t)
	unit := service.Systemd{}.UnitPath(service.Config{UserHome: env["HOME"]})
	if err := os.MkdirAll(filepath.Dir(unit), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, fmt.Appendf(nil, "[Service]\nEnvironment=HERMES_HOME=%s\n", env["HERMES_HOME"]), 0o600); err != nil {
		t.Fatal(err)
	}
	checkAsks(t, env, []askCase{
		{[]string{"stop", "--dry-run"}, "systemctl --user stop", 0},
		{[]string{"stop", "--dry-run", "--timeout", "5s"}, "systemctl --user stop", 0},
		{[]string{"uninstall", "--dry-run"}, "systemctl --user disable", 0},
		{[]string{"start", "--dry-run"}, "systemctl --user start", 0},
	})
}
