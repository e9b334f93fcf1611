//go:build !windows

package service

// The systemd and launchd definitions hold POSIX paths, so their tests run
// where those paths are absolute.

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"howett.net/plist"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ann(system bool) Config {
	c := Config{Exe: "/usr/local/bin/hermes-supervisor", Home: "/home/ann/.hermes", StopTimeout: 75 * time.Second, UserHome: "/home/ann", UID: 501, System: system,
		Path: "/home/ann/.local/bin:/usr/local/bin:/usr/bin:/bin"}
	if system {
		c.User = "ann"
	}
	return c
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./platform/service -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	weird := ann(false)
	weird.Home = `/home/ann/my "hermes" 100% $HOME`
	weird.LockDir = "/home/ann/locks & <more>"
	weird.Path = "/opt/my tools/bin:/usr/bin"
	weird.Demo = true
	tests := []struct {
		name string
		got  []byte
	}{
		{"user.service", mustUnit(t, ann(false))},
		{"system.service", mustUnit(t, ann(true))},
		{"quoting.service", mustUnit(t, weird)},
		{"user.plist", mustPlist(t, ann(false))},
		{"system.plist", mustPlist(t, ann(true))},
		{"quoting.plist", mustPlist(t, weird)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, tt.got) })
	}
}

// TestSystemdAnalyzeVerify runs systemd's own checker over both units. It
// exits 0 on warnings, so its output must be empty too.
func TestSystemdAnalyzeVerify(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd exists only on Linux")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (.ci/run installs it)")
	}
	exe, err := exec.LookPath("true") // ExecStart must name a real executable
	if err != nil {
		t.Fatal(err)
	}
	for i, home := range []string{testdir.New(t), testdir.New(t), `/home/ann/my "hermes" 100% $HOME`} {
		system := i == 1
		c := ann(system)
		c.Exe, c.Home, c.User = exe, home, ""
		dir := testdir.New(t)
		path := filepath.Join(dir, Name+".service")
		if err := os.WriteFile(path, mustUnit(t, c), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"verify", "--man=no", path}
		env := os.Environ()
		if !system {
			runtimeDir := filepath.Join(dir, "xdg")
			if err := os.Mkdir(runtimeDir, 0o700); err != nil {
				t.Fatal(err)
			}
			args = append([]string{"--user"}, args...)
			env = append(env, "XDG_RUNTIME_DIR="+runtimeDir, "HOME="+dir)
		}
		cmd := exec.Command(analyze, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("systemd-analyze %v: %v\n%s", args, err, out)
		}
	}
}

// agent is what launchd needs from the plist, with pointers so that a
// missing key is told apart from a zero value, and typed so that a wrong
// type fails to decode.
type agent struct {
	Label                *string           `plist:"Label"`
	ProgramArguments     []string          `plist:"ProgramArguments"`
	EnvironmentVariables map[string]string `plist:"EnvironmentVariables"`
	RunAtLoad            *bool             `plist:"RunAtLoad"`
	KeepAlive            *struct {
		SuccessfulExit *bool `plist:"SuccessfulExit"`
	} `plist:"KeepAlive"`
	ExitTimeOut       *int    `plist:"ExitTimeOut"`
	ThrottleInterval  *int    `plist:"ThrottleInterval"`
	StandardOutPath   *string `plist:"StandardOutPath"`
	StandardErrorPath *string `plist:"StandardErrorPath"`
	UserName          *string `plist:"UserName"`
}

func TestPlistKeys(t *testing.T) {
	for _, c := range []Config{ann(false), ann(true), func() Config { c := ann(false); c.Home = `/Users/ann/a "b" & <c>`; return c }()} {
		var a agent
		if _, err := plist.Unmarshal(mustPlist(t, c), &a); err != nil {
			t.Fatalf("plist does not parse: %v", err)
		}
		switch {
		case a.Label == nil || *a.Label != Label:
			t.Errorf("Label %v", a.Label)
		case !slices.Equal(a.ProgramArguments, append(runArgs(agentTimeouts(c)), "--log-file", filepath.Join(Launchd{}.LogDir(c), "hermes-supervisor.log"))):
			t.Errorf("ProgramArguments %q, want %q and the rotated log file", a.ProgramArguments, runArgs(agentTimeouts(c)))
		case a.EnvironmentVariables["HERMES_HOME"] != c.Home || a.EnvironmentVariables["PATH"] != c.Path:
			t.Errorf("environment %q, want HERMES_HOME %q and PATH %q", a.EnvironmentVariables, c.Home, c.Path)
		case a.RunAtLoad == nil || !*a.RunAtLoad:
			t.Error("RunAtLoad not true")
		case a.KeepAlive == nil || a.KeepAlive.SuccessfulExit == nil || *a.KeepAlive.SuccessfulExit:
			t.Error("KeepAlive must restart only after a failure (SuccessfulExit false)")
		case a.ExitTimeOut == nil || time.Duration(*a.ExitTimeOut)*time.Second <= agentTimeouts(c).StopTimeout:
			t.Errorf("ExitTimeOut %v must outlast the stop timeout %v", a.ExitTimeOut, agentTimeouts(c).StopTimeout)
		case a.StandardErrorPath == nil || !strings.HasPrefix(*a.StandardErrorPath, Launchd{}.LogDir(c)):
			t.Errorf("StandardErrorPath %v", a.StandardErrorPath)
		case c.System != (a.UserName != nil):
			t.Errorf("UserName %v for system=%v", a.UserName, c.System)
		}
	}
}

func TestPlans(t *testing.T) {
	// Hermes' definitions for ann's default home and for her work profile
	// (testdata/migrate): only the first is this home's.
	hermesUnit := func(pattern string) ([]string, error) {
		return filepath.Glob(filepath.Join("testdata", "migrate", "systemd", filepath.Base(pattern)))
	}
	hermesAgent := func(pattern string) ([]string, error) {
		return filepath.Glob(filepath.Join("testdata", "migrate", "launchd", filepath.Base(pattern)))
	}
	none := func(string) ([]string, error) { return nil, nil }
	// A Mac where ann is logged in at the screen and nothing of ours is
	// loaded yet.
	gui := (&fakeLaunchctl{}).output
	tests := []struct {
		name      string
		plan      func() (Plan, error)
		wantRuns  [][]string
		wantNotes []string
	}{
		{"systemd user install", func() (Plan, error) { return Systemd{Glob: none}.Install(ann(false), false) },
			[][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "hermes-supervisor.service"}, {"systemctl", "--user", "restart", "--no-block", "hermes-supervisor.service"}},
			[]string{"loginctl enable-linger"}},
		{"systemd install warns about Hermes' unit", func() (Plan, error) { return Systemd{Glob: hermesUnit}.Install(ann(false), false) },
			[][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "hermes-supervisor.service"}, {"systemctl", "--user", "restart", "--no-block", "hermes-supervisor.service"}},
			[]string{"Hermes' own unit hermes-gateway.service also restarts", "--migrate", "hermes-gateway-work.service runs the gateway of another Hermes home"}},
		{"systemd install --migrate disables Hermes' unit first", func() (Plan, error) { return Systemd{Glob: hermesUnit}.Install(ann(false), true) },
			[][]string{{"systemctl", "--user", "disable", "--now", "hermes-gateway.service"}, {"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "hermes-supervisor.service"}, {"systemctl", "--user", "restart", "--no-block", "hermes-supervisor.service"}},
			[]string{"disabling Hermes' own unit hermes-gateway.service"}},
		{"systemd system uninstall", func() (Plan, error) { return Systemd{}.Uninstall(ann(true)) },
			[][]string{{"systemctl", "disable", "--now", "hermes-supervisor.service"}, {"systemctl", "daemon-reload"}}, nil},
		{"systemd stop", func() (Plan, error) { return Systemd{}.Control(ann(false), "stop") },
			[][]string{{"systemctl", "--user", "stop", "hermes-supervisor.service"}}, nil},
		{"launchd install uses bootstrap, not load", func() (Plan, error) { return Launchd{Glob: none, Output: gui}.Install(ann(false), false) },
			[][]string{{"mkdir", "-p", "/home/ann/Library/Logs/hermes-supervisor"}, {"launchctl", "enable", "gui/501/ai.hermes.supervisor"}, {"launchctl", "bootout", "gui/501/ai.hermes.supervisor"}},
			[]string{"EHOSTUNREACH", "at most 1m0s to exit: the agent's stop timeout is 45s"}},
		{"launchd install --migrate unloads Hermes' agent", func() (Plan, error) { return Launchd{Glob: hermesAgent, Output: gui}.Install(ann(false), true) },
			[][]string{{"launchctl", "bootout", "gui/501/ai.hermes.gateway"}, {"launchctl", "bootout", "user/501/ai.hermes.gateway"}, {"launchctl", "disable", "gui/501/ai.hermes.gateway"}, {"launchctl", "disable", "user/501/ai.hermes.gateway"},
				{"mkdir", "-p", "/home/ann/Library/Logs/hermes-supervisor"}, {"launchctl", "enable", "gui/501/ai.hermes.supervisor"}, {"launchctl", "bootout", "gui/501/ai.hermes.supervisor"}},
			[]string{"unloading and disabling Hermes' own agent ai.hermes.gateway"}},
		// Run as ann: her log directory is made for her (a Do step), not
		// by `mkdir -p` as root (TestLaunchdDaemonLogsWhereItsUserCan).
		{"launchd system daemon", func() (Plan, error) { return Launchd{Glob: none, Output: gui}.Install(ann(true), false) },
			[][]string{{"launchctl", "enable", "system/ai.hermes.supervisor"}, {"launchctl", "bootout", "system/ai.hermes.supervisor"}},
			nil},
		{"launchd system daemon run as root", func() (Plan, error) {
			c := ann(true)
			c.User = "root"
			return Launchd{Glob: none, Output: gui}.Install(c, false)
		},
			[][]string{{"mkdir", "-p", "/Library/Logs/hermes-supervisor"}, {"launchctl", "enable", "system/ai.hermes.supervisor"}, {"launchctl", "bootout", "system/ai.hermes.supervisor"}},
			nil},
		{"launchd restart", func() (Plan, error) { return Launchd{Output: gui}.Control(ann(false), "restart") },
			[][]string{{"launchctl", "kickstart", "-k", "gui/501/ai.hermes.supervisor"}}, nil},
		{"launchd stop", func() (Plan, error) { return Launchd{Output: gui}.Control(ann(false), "stop") },
			[][]string{{"launchctl", "kill", "SIGTERM", "gui/501/ai.hermes.supervisor"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.plan()
			if err != nil {
				t.Fatal(err)
			}
			var runs [][]string
			for _, s := range p.Steps {
				if s.Run != nil {
					runs = append(runs, s.Run)
				}
			}
			if !reflect.DeepEqual(runs, tt.wantRuns) {
				t.Errorf("commands:\n%q\nwant\n%q", runs, tt.wantRuns)
			}
			notes := strings.Join(p.Notes, "\n")
			for _, w := range tt.wantNotes {
				if !strings.Contains(notes, w) {
					t.Errorf("notes %q lack %q", notes, w)
				}
			}
			if len(tt.wantNotes) == 0 && len(p.Notes) > 0 {
				t.Errorf("unexpected notes %q", p.Notes)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"relative binary": func(c *Config) { c.Exe = "hermes-supervisor" },
		"relative home":   func(c *Config) { c.Home = ".hermes" },
		"relative locks":  func(c *Config) { c.LockDir = "locks" },
		"no user home":    func(c *Config) { c.UserHome = "" },
		"no stop timeout": func(c *Config) { c.StopTimeout = 0 },
	} {
		c := ann(false)
		mut(&c)
		if _, err := (Systemd{}).Install(c, false); err == nil {
			t.Errorf("%s: Install accepted %+v", name, c)
		}
		if _, err := (Launchd{}).Uninstall(c); err == nil {
			t.Errorf("%s: Uninstall accepted %+v", name, c)
		}
	}
	// Only a per-user service needs the user's home.
	c := ann(true)
	c.UserHome = ""
	if _, err := (Systemd{Glob: func(string) ([]string, error) { return nil, nil }}).Install(c, false); err != nil {
		t.Errorf("a system service without a user home: %v", err)
	}
	c.System = false
	if err := c.Validate(false); err != nil {
		t.Errorf("a manager without per-user dirs needs no user home: %v", err)
	}
}

// mustUnit renders c's unit, failing the test on an error.
func mustUnit(t *testing.T, c Config) []byte {
	t.Helper()
	b, err := Systemd{}.Unit(c)
	if err != nil {
		t.Fatalf("Unit: %v", err)
	}
	return b
}

// mustPlist renders c's plist, failing the test on an error.
func mustPlist(t *testing.T, c Config) []byte {
	t.Helper()
	b, err := Launchd{}.Plist(c)
	if err != nil {
		t.Fatalf("Plist: %v", err)
	}
	return b
}

// mustDeployFiles renders deploy/, failing the test on an error.
func mustDeployFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := DeployFiles(hermesWindowsHome)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
