//go:build !windows

package service

import (
	"slices"
	"strings"
	"testing"

	"howett.net/plist"
)

// TestConfigFilePinned checks that a config file elsewhere than the home
// reaches every service manager's command line as a global flag before
// `run`: without it the service reads the home's file (or none) and runs
// another gateway than install judged.
func TestConfigFilePinned(t *testing.T) {
	c := ann(false)
	c.ConfigFile = "/etc/hermes/sup.json"
	want := []string{"--config", "/etc/hermes/sup.json", "run"}
	has := func(what string, args []string) {
		t.Helper()
		i := slices.Index(args, "--config")
		if i < 0 || i+3 > len(args) || !slices.Equal(args[i:i+3], want) {
			t.Errorf("%s: %q lacks %q", what, args, want)
		}
	}
	unit, err := Systemd{}.Unit(c)
	if err != nil {
		t.Fatal(err)
	}
	d, err := unitDirectives(unit)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := unitWordsStrict(d["Service.ExecStart"][0], true)
	if err != nil {
		t.Fatal(err)
	}
	has("ExecStart", argv)
	data, err := Launchd{}.Plist(c)
	if err != nil {
		t.Fatal(err)
	}
	var a agent
	if _, err := plist.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	has("ProgramArguments", a.ProgramArguments)
	has("the Windows service's command line", scmArgs(c, ""))

	c.ConfigFile = "sup.json"
	if err := c.Validate(true); err == nil || !strings.Contains(err.Error(), "--config an absolute path") {
		t.Errorf("a relative config file: %v, want it refused", err)
	}
}

// TestConfigFileNoted checks that under sudo a config file the invoking
// user did not type (HERMES_SUPERVISOR_CONFIG, kept by sudo) is shown
// before anything is written, as the home is.
func TestConfigFileNoted(t *testing.T) {
	c := hostileConfig(true)
	c.ConfigFile = "/home/ann/sup.json"
	c.Origins.ConfigFile = Origin{From: "the environment variable HERMES_SUPERVISOR_CONFIG", Unseen: true}
	p, err := Systemd{Glob: func(string) ([]string, error) { return nil, nil }}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `config file "/home/ann/sup.json" comes from the environment variable HERMES_SUPERVISOR_CONFIG`
	if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, want) {
		t.Errorf("notes lack %q:\n%s", want, notes)
	}
}
