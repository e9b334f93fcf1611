package service

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "migrate", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each of Hermes' definitions names the home it serves: by HERMES_HOME,
// else by its profile under the user's ~/.hermes.
func TestDefinitionHomes(t *testing.T) {
	const root = "/home/ann/.hermes"
	tests := []struct {
		file  string
		home  func([]byte, string) (string, bool)
		want  string
		known bool
	}{
		{"systemd/hermes-gateway.service", hermesUnitHome, "/home/ann/.hermes", true},
		{"systemd/hermes-gateway-work.service", hermesUnitHome, "/home/ann/.hermes/profiles/work", true},
		{"systemd/hermes-gateway-a1b2c3d4.service", hermesUnitHome, filepath.Join(root, "profiles", "play"), true},
		{"launchd/ai.hermes.gateway.plist", agentHome, "/home/ann/.hermes", true},
		{"launchd/ai.hermes.gateway-work.plist", agentHome, filepath.Join(root, "profiles", "work"), true},
	}
	for _, tt := range tests {
		got, ok := tt.home(readFixture(t, tt.file), root)
		if got != tt.want || ok != tt.known {
			t.Errorf("%s: %q %v, want %q %v", tt.file, got, ok, tt.want, tt.known)
		}
	}
	if _, ok := hermesUnitHome([]byte("[Service]\nExecStart=/x/hermes -p ../../etc gateway run\n"), root); ok {
		t.Error("a profile name Hermes refuses named a home")
	}
	if _, ok := agentHome([]byte("not a plist"), root); ok {
		t.Error("an unreadable plist named a home")
	}
}

func TestLauncherHome(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"windows/home/gateway-service/Hermes_Gateway.cmd", `C:\Users\Ann Lee\AppData\Local\hermes`},
		{"windows/home/gateway-service/Hermes_Gateway.vbs", `C:\Users\Ann Lee\AppData\Local\hermes`},
		{"windows/home/gateway-service/Hermes_Gateway_work.js", `C:\Users\Ann Lee\AppData\Local\hermes\profiles\work`},
	}
	for _, tt := range tests {
		if got, ok := launcherHome(readFixture(t, tt.file)); !ok || got != tt.want {
			t.Errorf("%s: %q %v, want %q", tt.file, got, ok, tt.want)
		}
	}
	if _, ok := launcherHome([]byte("@echo off\r\nexit /b 0\r\n")); ok {
		t.Error("a launcher without HERMES_HOME named one")
	}
}

func TestSameHomePath(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/home/ann/.hermes", "/home/ann/.hermes/", true},
		{"/home/ann/.hermes", "/home/ann/.Hermes", false},
		{`C:\Users\Ann\AppData\Local\hermes`, `c:\users\ann\appdata\local\HERMES`, true},
		{`C:\Users\Ann\AppData\Local\hermes`, `C:\Users\Ann\AppData\Local\hermes\profiles\work`, false},
	}
	for _, tt := range tests {
		if got := sameHomePath(tt.a, tt.b); got != tt.want {
			t.Errorf("sameHomePath(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// On Windows the tasks of this home are those whose launcher Hermes keeps
// in <home>\gateway-service and which set this HERMES_HOME; the Startup
// entries those that start such a launcher. Another profile's are left.
func TestWindowsLaunchersOfThisHome(t *testing.T) {
	const home = `C:\Users\Ann Lee\AppData\Local\hermes`
	const startup = `C:\Users\Ann Lee\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup`
	glob := func(pattern string) ([]string, error) {
		dir := "Startup"
		if strings.Contains(pattern, "gateway-service") {
			dir = filepath.Join("home", "gateway-service")
		}
		// The pattern's last element, whichever separator the OS uses.
		base := pattern[strings.LastIndexAny(pattern, `\/`)+1:]
		return filepath.Glob(filepath.Join("testdata", "migrate", "windows", dir, base))
	}
	tasks, entries := hermesWindowsLaunchers(home, startup, glob, nil)
	if !slices.Equal(tasks, []string{"Hermes_Gateway"}) {
		t.Errorf("tasks %q, want [Hermes_Gateway]: the work profile's launcher sets another HERMES_HOME", tasks)
	}
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e))
	}
	// Hermes_Gateway_js.js is the JScript entry Hermes writes where
	// VBScript is absent: its path literal doubles every backslash.
	// Hermes_Gateway_other.js starts the work profile's launcher and only
	// names this home's in a comment.
	if want := []string{"Hermes_Gateway.vbs", "Hermes_Gateway_js.js"}; !slices.Equal(names, want) {
		t.Errorf("Startup entries %q, want %q (the work entries start another home's launcher)", names, want)
	}
}

// A named profile's --migrate touches only that profile's task,
// Hermes_Gateway_work, whose launcher Hermes keeps in the profile's own
// home, and the Startup entries that start it: never the root's.
func TestWindowsLaunchersOfAProfile(t *testing.T) {
	const home = `C:\Users\Ann Lee\AppData\Local\hermes\profiles\work`
	const startup = `C:\Users\Ann Lee\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup`
	glob := func(pattern string) ([]string, error) {
		dir := "Startup"
		if strings.Contains(pattern, "gateway-service") {
			dir = filepath.Join("profiles", "work", "gateway-service")
		}
		base := pattern[strings.LastIndexAny(pattern, `\/`)+1:]
		return filepath.Glob(filepath.Join("testdata", "migrate", "windows", dir, base))
	}
	tasks, entries := hermesWindowsLaunchers(home, startup, glob, nil)
	if !slices.Equal(tasks, []string{"Hermes_Gateway_work"}) {
		t.Errorf("tasks %q, want [Hermes_Gateway_work]", tasks)
	}
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e))
	}
	// Hermes_Gateway_other.js starts the work profile's launcher too; the
	// root's entries (Hermes_Gateway.vbs, Hermes_Gateway_js.js) are left.
	if want := []string{"Hermes_Gateway_work.vbs", "Hermes_Gateway_other.js"}; !slices.Equal(names, want) {
		t.Errorf("Startup entries %q, want %q", names, want)
	}
}

func TestJSStringLiterals(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{`var a = "C:\\Users\\x"; // "not"`, []string{`C:\Users\x`}},
		{`f('it\'s', "q\"q") /* 'no' */ + "\x41\u0042\n"`, []string{`it's`, `q"q`, "AB\n"}},
		{`"open`, []string{"open"}},
	}
	for _, tt := range tests {
		if got := jsStringLiterals(tt.src); !slices.Equal(got, tt.want) {
			t.Errorf("jsStringLiterals(%s) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
