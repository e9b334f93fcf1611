package service

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// ResolveCommand finds the program on the service's PATH, not on ours,
// skips relative PATH entries, and keeps the arguments.
func TestResolveCommand(t *testing.T) {
	dir := testdir.New(t)
	venv, other := filepath.Join(dir, "venv"), filepath.Join(dir, "empty")
	for _, d := range []string{venv, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Both names, so that LookPath finds one on POSIX and on Windows.
	for _, n := range []string{"hermes", "hermes.exe"} {
		if err := os.WriteFile(filepath.Join(venv, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sep := string(os.PathListSeparator)
	tests := []struct {
		name, path string
		found      bool
	}{
		{"second entry", other + sep + venv, true},
		{"only entry", venv, true},
		{"relative entry skipped", "venv" + sep + other, false},
		{"not there", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "relative entry skipped" {
				t.Chdir(dir) // "venv" would resolve if relative entries counted
			}
			got, err := ResolveCommand([]string{"hermes", "gateway", "run"}, tt.path)
			if !tt.found {
				if !errors.Is(err, ErrNoGateway) {
					t.Fatalf("got %q, %v; want ErrNoGateway", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(got[0]) || !strings.HasPrefix(got[0], venv) || !slices.Equal(got[1:], []string{"gateway", "run"}) {
				t.Errorf("got %q, want %s/hermes gateway run", got, venv)
			}
		})
	}
}

// The installing user gets start, stop and query on the service; nothing
// is added when there is no installer.
func TestServiceSDDL(t *testing.T) {
	const sid = "S-1-5-21-1-2-3-1001"
	got := serviceSDDL(sid)
	if !strings.Contains(got, "(A;;CCLCSWRPWPLOCRRC;;;"+sid+")") || !strings.HasPrefix(got, serviceSDDL("")) {
		t.Errorf("serviceSDDL = %s", got)
	}
	if strings.Contains(serviceSDDL(""), "S-1-5-21") {
		t.Error("an ACE for nobody")
	}
}

// The Windows service pins the resolved gateway after `--`, last, and
// never for the demo.
func TestSCMArgsPinTheGateway(t *testing.T) {
	c := Config{Exe: "/x/hermes-supervisor", Home: "/h", StopTimeout: time.Minute, Command: []string{"/venv/hermes", "gateway", "run"}}
	args := scmArgs(c, "S-1-5-21-1")
	if i := slices.Index(args, "--"); i < 0 || !slices.Equal(args[i+1:], c.Command) || !slices.Contains(args[:i], "--service") {
		t.Errorf("scmArgs = %q", args)
	}
	c.Demo = true
	if slices.Contains(scmArgs(c, ""), "--") {
		t.Errorf("the demo pins a gateway: %q", scmArgs(c, ""))
	}
}

// A start-up error reaches the log file, appended to what is there.
func TestReportStartupError(t *testing.T) {
	log := filepath.Join(testdir.New(t), "hermes-supervisor.log")
	if err := os.WriteFile(log, []byte("earlier line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ReportStartupError(Name, log, errors.New("home is locked by pid 42"))
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "earlier line\n") || !strings.Contains(string(b), "could not run as a service: home is locked by pid 42") {
		t.Errorf("log:\n%s", b)
	}
}
