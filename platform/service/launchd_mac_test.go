//go:build !windows

package service

// Issue 27's macOS findings, each against the recording fake launchctl of
// launchd_test.go or the rendered plist parsed back. What only a real Mac
// can show is listed in docs/testing.md ("launchd: what only a Mac shows").

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"howett.net/plist"
)

func runsOf(p Plan) [][]string {
	var runs [][]string
	for _, s := range p.Steps {
		if s.Run != nil {
			runs = append(runs, s.Run)
		}
	}
	return runs
}

func hasCall(calls []string, prefix string) bool {
	return slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// Item 13: over SSH or with nobody logged in at the Mac there is no
// gui/<uid>; install loads the agent into user/<uid>, as Hermes does, and
// start finds it there. Only with neither domain does it refuse, before
// writing anything.
func TestLaunchdFallsBackToUserDomain(t *testing.T) {
	f := &fakeLaunchctl{noGUI: true}
	c := annOnMac(t)
	p, err := Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: f.output}.Install(c, false)
	if err != nil {
		t.Fatalf("install without a GUI login: %v", err)
	}
	if err := p.Apply(context.Background(), f.run); err != nil {
		t.Fatalf("install without a GUI login: %v; calls %q", err, f.calls)
	}
	if !slices.Contains(f.calls, "bootstrap user/501 "+Launchd{}.PlistPath(c)) {
		t.Errorf("not bootstrapped into user/501: %q", f.calls)
	}
	if hasCall(f.calls, "bootstrap gui/") || hasCall(f.calls, "enable gui/") {
		t.Errorf("used gui/501, which does not exist: %q", f.calls)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "user/501") {
		t.Errorf("notes do not say where the agent went: %q", p.Notes)
	}

	// start and stop find the job in user/501.
	loaded := &fakeLaunchctl{noGUI: true, loaded: func(target string) ([]byte, error) {
		if target == "user/501/"+Label {
			return []byte("state = running\npid = 7\n"), nil
		}
		return []byte("Could not find service"), exitErr(113)
	}}
	p, err = Launchd{Output: loaded.output}.Control(c, "start")
	if err != nil {
		t.Fatal(err)
	}
	if runs := runsOf(p); len(runs) != 1 || Join(runs[0]) != "launchctl kickstart user/501/"+Label {
		t.Errorf("start runs %q", runs)
	}

	// Neither domain: refused, nothing written.
	none := &fakeLaunchctl{noGUI: true, noUser: true}
	c = annOnMac(t)
	_, err = Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: none.output}.Install(c, false)
	if !errors.Is(err, ErrNoGUISession) || !strings.Contains(err.Error(), "--system") {
		t.Fatalf("install with no launchd session at all: %v", err)
	}
	if _, err := os.Lstat(Launchd{}.PlistPath(c)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused install wrote its plist: %v", err)
	}
}

// stopFake is launchd around `launchctl kill SIGTERM`: the supervisor
// keeps running for drain prints after the signal, then ends as after.
type stopFake struct {
	fakeLaunchctl
	killed bool
	drain  int
	after  string
	prints int // of our job after the kill
}

func (f *stopFake) output(ctx context.Context, argv []string) ([]byte, error) {
	if argv[1] == "print" && strings.HasSuffix(argv[2], "/"+Label) {
		f.calls = append(f.calls, strings.Join(argv[1:], " "))
		if !f.killed {
			return []byte("state = running\npid = 4242\n"), nil
		}
		f.prints++
		if f.drain > 0 {
			f.drain--
			return []byte("state = running\npid = 4242\n"), nil
		}
		if f.after == "" {
			return []byte("Could not find service"), exitErr(113)
		}
		return []byte(f.after), nil
	}
	return f.fakeLaunchctl.output(ctx, argv)
}

func (f *stopFake) run(ctx context.Context, argv []string) error {
	if len(argv) > 1 && argv[1] == "kill" {
		f.killed = true
	}
	return f.fakeLaunchctl.run(ctx, argv)
}

// Item 8: stop returns once the supervisor launchd ran has exited, not
// when launchctl kill returns; a supervisor that exits with an error
// (which launchd restarts) or is replaced fails the stop.
func TestLaunchdStopWaits(t *testing.T) {
	tests := []struct {
		name  string
		after string
		ok    bool
		want  string
	}{
		{"exits 0", "state = not running\nlast exit code = 0\n", true, ""},
		{"unloaded", "", true, ""},
		{"exits 1", "state = not running\nlast exit code = 1\n", false, "last exit code 1"},
		{"replaced", "state = running\npid = 5151\n", false, "started another (pid 5151)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &stopFake{drain: 3, after: tt.after}
			c := annOnMac(t)
			p, err := Launchd{Output: f.output}.Control(c, "stop")
			if err != nil {
				t.Fatal(err)
			}
			err = p.Apply(context.Background(), f.run)
			if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("stop: %v, want ok %v (%q)", err, tt.ok, tt.want)
			}
			if f.prints < 4 {
				t.Errorf("stop returned after %d looks at the job, before the supervisor had exited: %q", f.prints, f.calls)
			}
		})
	}
}

// Item 12: a reinstall waits for the old job as long as launchd lets it
// stop (its ExitTimeOut, not 15 s), and a new definition that does not
// load leaves the old one loaded, saying so.
func TestLaunchdReinstallKeepsAnAgentLoaded(t *testing.T) {
	c := annOnMac(t)
	path := Launchd{}.PlistPath(c)
	old := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Label</key><string>ai.hermes.supervisor</string><key>ExitTimeOut</key><integer>90</integer></dict></plist>
`)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeLaunchctl{gone: 2, bootstrap: []error{exitErr(78)}}
	p, err := Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: f.output}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	var wait string
	for _, s := range p.Steps {
		if s.Do != nil && strings.Contains(s.What, "old job gone") {
			wait = s.What
		}
	}
	// The old plist's 90 s (written before user agents were clamped) and
	// the margin for launchd's teardown.
	if !strings.Contains(wait, "wait up to 1m40s") {
		t.Errorf("the wait for the old job is %q, want its ExitTimeOut and margin, 1m40s", wait)
	}
	err = p.Apply(context.Background(), f.run)
	if err == nil || !strings.Contains(err.Error(), "the old one is back") {
		t.Fatalf("install whose new definition fails to load: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(old) {
		t.Errorf("the old definition is not back:\n%s", got)
	}
	n := 0
	for _, call := range f.calls {
		if call == "bootstrap gui/501 "+path {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d bootstraps, want the new one and the old one back: %q", n, f.calls)
	}

	// With no earlier definition, the error says nothing is loaded.
	c = annOnMac(t)
	f = &fakeLaunchctl{bootstrap: []error{exitErr(78)}}
	p, err = Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: f.output}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(context.Background(), f.run); err == nil || !strings.Contains(err.Error(), "nothing of ours is loaded") {
		t.Errorf("first install whose definition fails to load: %v", err)
	}
}

// Item 12: a user agent's ExitTimeOut fits launchd's 60 s limit, and the
// supervisor's stop timeout fits inside it with the grace to take the
// gateway's tree down; a daemon keeps the full stop timeout.
func TestPlistExitTimeOutFitsLaunchd(t *testing.T) {
	for _, system := range []bool{false, true} {
		c := ann(system)
		var a struct {
			ProgramArguments []string `plist:"ProgramArguments"`
			ExitTimeOut      int      `plist:"ExitTimeOut"`
		}
		if _, err := plist.Unmarshal(mustPlist(t, c), &a); err != nil {
			t.Fatal(err)
		}
		i := slices.Index(a.ProgramArguments, "--stop-timeout")
		if i < 0 {
			t.Fatalf("no --stop-timeout in %q", a.ProgramArguments)
		}
		stop, err := time.ParseDuration(a.ProgramArguments[i+1])
		if err != nil {
			t.Fatal(err)
		}
		exit := time.Duration(a.ExitTimeOut) * time.Second
		switch {
		case !system && exit > agentExitLimit:
			t.Errorf("user agent ExitTimeOut %v: launchd cuts it to %v", exit, agentExitLimit)
		case system && stop != c.StopTimeout:
			t.Errorf("daemon stop timeout %v, want %v", stop, c.StopTimeout)
		case stop+stopGrace > exit:
			t.Errorf("stop timeout %v and grace %v do not fit ExitTimeOut %v", stop, stopGrace, exit)
		}
	}
}

// Item 10: `sudo install --system --migrate` also unloads and disables
// the invoking user's own Hermes agent of this home, in their domains; a
// plist there that is a symlink is never followed and is left alone.
func TestLaunchdSystemMigrateUnloadsUsersAgent(t *testing.T) {
	agents := filepath.Join(testdir.New(t), "Library", "LaunchAgents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(filepath.Join("testdata", "migrate", "launchd", "ai.hermes.gateway.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agents, "ai.hermes.gateway.plist"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	// ann's symlink to a file only root may read.
	secret := filepath.Join(testdir.New(t), "secret.plist")
	if err := os.WriteFile(secret, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(agents, "ai.hermes.gateway-evil.plist")); err != nil {
		t.Fatal(err)
	}
	c := ann(true) // sudo: ann's uid and her HERMES_HOME /home/ann/.hermes
	c.UserHome = filepath.Dir(filepath.Dir(agents))
	glob := func(pattern string) ([]string, error) {
		if strings.HasPrefix(pattern, "/Library/") {
			return nil, nil
		}
		return filepath.Glob(pattern)
	}
	f := &fakeLaunchctl{noGUI: true} // over SSH
	p, err := Launchd{Glob: glob, Output: f.output}.Install(c, true)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, r := range runsOf(p) {
		runs = append(runs, Join(r))
	}
	for _, want := range []string{"launchctl bootout user/501/ai.hermes.gateway", "launchctl bootout gui/501/ai.hermes.gateway", "launchctl disable user/501/ai.hermes.gateway"} {
		if !slices.Contains(runs, want) {
			t.Errorf("%q missing from %q", want, runs)
		}
	}
	if slices.ContainsFunc(runs, func(r string) bool { return strings.Contains(r, "evil") }) {
		t.Errorf("acted on a symlinked plist: %q", runs)
	}
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, "ai.hermes.gateway-evil.plist runs the gateway of another Hermes home (or cannot be read): left alone") {
		t.Errorf("notes %q do not name the symlinked plist as left alone", notes)
	}
	for _, s := range p.Steps {
		if s.Run != nil && s.Run[1] == "disable" && !s.MayFail && Join(s.Run) != "launchctl disable user/501/ai.hermes.gateway" {
			t.Errorf("a disable that must succeed targets a domain ann does not have: %q", s.Run)
		}
	}
}

// Item 11: Hermes writes its home's resolved path into its plist: a
// ~/.hermes that is a symlink is the same home, either way round.
func TestLaunchdMigrateSymlinkedHome(t *testing.T) {
	dir := testdir.New(t)
	real := filepath.Join(dir, "data", "hermes")
	link := filepath.Join(dir, "ann", ".hermes")
	for _, d := range []string{real, filepath.Dir(link)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ inPlist, home string }{{real, link}, {link, real}} {
		agents := filepath.Join(testdir.New(t), "Library", "LaunchAgents")
		if err := os.MkdirAll(agents, 0o755); err != nil {
			t.Fatal(err)
		}
		data := `<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Label</key><string>ai.hermes.gateway</string>
<key>EnvironmentVariables</key><dict><key>HERMES_HOME</key><string>` + xmlEscape(tt.inPlist) + `</string></dict></dict></plist>
`
		if err := os.WriteFile(filepath.Join(agents, "ai.hermes.gateway.plist"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		c := annOnMac(t)
		c.Home, c.UserHome = tt.home, filepath.Dir(filepath.Dir(agents))
		f := &fakeLaunchctl{}
		p, err := Launchd{Output: f.output}.Install(c, true)
		if err != nil {
			t.Fatal(err)
		}
		var runs []string
		for _, r := range runsOf(p) {
			runs = append(runs, Join(r))
		}
		if !slices.Contains(runs, "launchctl disable gui/501/ai.hermes.gateway") {
			t.Errorf("plist home %s, our home %s: Hermes' agent not disabled: %q; notes %q", tt.inPlist, tt.home, runs, p.Notes)
		}
	}
}

// Item 9: the plist runs `hermes-supervisor run` and pins no gateway
// command, even when install resolved one: the gateway's argv, and the
// --external-supervisor policy Hermes' updater reads from it, are `run`'s
// to choose, as under systemd.
func TestPlistLeavesGatewayCommandToRun(t *testing.T) {
	c := ann(false)
	c.Command = []string{"/opt/hermes/bin/hermes", "gateway", "run"}
	var a struct {
		ProgramArguments []string `plist:"ProgramArguments"`
	}
	if _, err := plist.Unmarshal(mustPlist(t, c), &a); err != nil {
		t.Fatal(err)
	}
	want := append(runArgs(agentTimeouts(c)), "--log-file", filepath.Join(Launchd{}.LogDir(c), "hermes-supervisor.log"))
	if !slices.Equal(a.ProgramArguments, want) {
		t.Errorf("ProgramArguments %q, want only `run`'s %q", a.ProgramArguments, want)
	}
	for _, w := range c.Command[:2] { // "run" is ours too
		if slices.Contains(a.ProgramArguments, w) {
			t.Errorf("the plist pins the gateway command word %q: %q", w, a.ProgramArguments)
		}
	}
}

// Item 14: the gateway starts in its Hermes home (launchd's default is
// /), with Hermes' soft limit on open files (launchd's default is 256),
// and a user agent may load into the background session (item 13).
func TestPlistServiceKeys(t *testing.T) {
	for _, system := range []bool{false, true} {
		c := ann(system)
		var a struct {
			WorkingDirectory   *string        `plist:"WorkingDirectory"`
			SoftResourceLimits map[string]int `plist:"SoftResourceLimits"`
			ThrottleInterval   int            `plist:"ThrottleInterval"`
			LimitLoad          []string       `plist:"LimitLoadToSessionType"`
		}
		if _, err := plist.Unmarshal(mustPlist(t, c), &a); err != nil {
			t.Fatal(err)
		}
		if a.WorkingDirectory == nil || *a.WorkingDirectory != c.Home {
			t.Errorf("system %v: WorkingDirectory %v, want %s", system, a.WorkingDirectory, c.Home)
		}
		if a.SoftResourceLimits["NumberOfFiles"] != 4096 {
			t.Errorf("system %v: SoftResourceLimits %v, want NumberOfFiles 4096", system, a.SoftResourceLimits)
		}
		if a.ThrottleInterval != 5 {
			t.Errorf("system %v: ThrottleInterval %d", system, a.ThrottleInterval)
		}
		if want := []string{"Aqua", "Background"}; !system && !slices.Equal(a.LimitLoad, want) || system && a.LimitLoad != nil {
			t.Errorf("system %v: LimitLoadToSessionType %q", system, a.LimitLoad)
		}
	}
	// The packaged agent, for no home in particular, names none.
	data, err := Launchd{}.Plist(packaged("/usr/local/bin/hermes-supervisor", false))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "WorkingDirectory") {
		t.Errorf("the packaged agent pins a working directory:\n%s", data)
	}
}

// Item 7: a user agent is subject to macOS 15's Local Network Privacy:
// install says what the failure looks like and what avoids it; a
// LaunchDaemon, which is exempt, gets no such note.
func TestLaunchdNotesLocalNetworkPrivacy(t *testing.T) {
	for _, system := range []bool{false, true} {
		f := &fakeLaunchctl{}
		p, err := Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: f.output}.Install(ann(system), false)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(p.Notes, "\n")
		has := strings.Contains(notes, "EHOSTUNREACH") && strings.Contains(notes, "No route to host") && strings.Contains(notes, "--system")
		if has == system {
			t.Errorf("system %v: notes %q", system, notes)
		}
	}
}
