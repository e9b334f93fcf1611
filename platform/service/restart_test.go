//go:build !windows

package service

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestUnitDoesNotRestartExitConfig checks that every unit install writes
// restarts a crashed supervisor but never one that exited 78: run exits
// 78 when it refuses a home or lock dir another user controls, which no
// restart can fix (issue 23 item 5).
func TestUnitDoesNotRestartExitConfig(t *testing.T) {
	for _, c := range []Config{ann(false), ann(true), {Exe: "/usr/bin/hermes-supervisor", StopTimeout: 75e9}} {
		keys := map[string][]string{}
		unit, err := Systemd{}.Unit(c)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(unit))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
				keys[k] = append(keys[k], v)
			}
		}
		if got := keys["Restart"]; !slices.Equal(got, []string{"on-failure"}) {
			t.Errorf("system=%v: Restart=%v, want on-failure", c.System, got)
		}
		var prevent []string
		for _, v := range keys["RestartPreventExitStatus"] {
			prevent = append(prevent, strings.Fields(v)...)
		}
		if !slices.Contains(prevent, "78") {
			t.Errorf("system=%v: RestartPreventExitStatus=%v does not hold 78", c.System, prevent)
		}
	}
}
