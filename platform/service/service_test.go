package service

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestSystemdQuote(t *testing.T) {
	tests := []struct {
		in   string
		exec bool
		want string
	}{
		{"/usr/bin/x", true, "/usr/bin/x"},
		{"/a b", true, `"/a b"`},
		{`/a"b`, true, `"/a\"b"`},
		{"100%", true, "100%%"},
		{"$HOME", true, "$$HOME"},
		{"HERMES_HOME=$HOME", false, "HERMES_HOME=$HOME"}, // Environment= does not expand $
		{"HERMES_HOME=100%", false, "HERMES_HOME=100%%"},
		{"", true, `""`},
		{`C:\x`, true, `"C:\\x"`},
		{"HERMES_HOME=/h i", false, `"HERMES_HOME=/h i"`},
	}
	for _, tt := range tests {
		if got := systemdQuote(tt.in, tt.exec); got != tt.want {
			t.Errorf("systemdQuote(%q, %v) = %s, want %s", tt.in, tt.exec, got, tt.want)
		}
	}
}

// TestApply carries a plan out for real in a temp dir: files written with
// their mode, commands run in order, a failing MayFail step passed over,
// removals done, and a failing command stopping the plan.
func TestApply(t *testing.T) {
	dir := testdir.New(t)
	unit := filepath.Join(dir, "a", "b", "x.service")
	var p Plan
	p.write(unit, 0o644, []byte("[Unit]\n"))
	p.try("fails-harmlessly")
	p.run("first")
	p.remove(unit)
	p.run("second")
	var ran []string
	run := func(_ context.Context, argv []string) error {
		ran = append(ran, argv[0])
		if argv[0] == "fails-harmlessly" {
			return os.ErrPermission
		}
		if _, err := os.Stat(unit); argv[0] == "first" && err != nil {
			t.Errorf("the unit was not written before the commands: %v", err)
		}
		return nil
	}
	if err := p.Apply(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"fails-harmlessly", "first", "second"}) {
		t.Errorf("ran %v", ran)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit not removed: %v", err)
	}
	var stop Plan
	stop.run("broken")
	stop.run("never")
	ran = nil
	err := stop.Apply(context.Background(), func(_ context.Context, argv []string) error {
		ran = append(ran, argv[0])
		return os.ErrPermission
	})
	if err == nil || !strings.Contains(err.Error(), "broken") || len(ran) != 1 {
		t.Errorf("Apply after a failure: %v, ran %v", err, ran)
	}
}

func TestPrint(t *testing.T) {
	var p Plan
	p.Notes = []string{"careful"}
	p.write("/x/y.service", 0o644, []byte("[Unit]"))
	p.try("launchctl", "bootout", "gui/501/ai.hermes.supervisor")
	p.run("systemctl", "--user", "enable", "it's here")
	p.remove("/x/y.service")
	var b bytes.Buffer
	if err := p.Print(&b); err != nil {
		t.Fatal(err)
	}
	want := "note: careful\nwrite /x/y.service (mode 0644):\n[Unit]\nrun launchctl bootout gui/501/ai.hermes.supervisor   # may fail: nothing to undo\nrun systemctl --user enable 'it'\\''s here'\nremove /x/y.service\n"
	if b.String() != want {
		t.Errorf("Print:\n%s\nwant\n%s", b.String(), want)
	}
}
