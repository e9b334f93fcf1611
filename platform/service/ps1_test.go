package service

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// The packaged PowerShell script supervises the home Hermes uses on
// Windows, %LOCALAPPDATA%\hermes (as DefaultHermesHome resolves it), grants
// the account the right to log on as a service before the service is
// created, and finds Hermes' JScript Startup entry.
func TestPowershellScriptDefaults(t *testing.T) {
	script, index := packagedScript(t)
	if strings.Contains(script, "'.hermes'") {
		t.Error(`the script still defaults to .hermes under the user profile, a home Hermes does not use on Windows`)
	}
	home := index("[Environment]::GetEnvironmentVariable('" + lockstore.WindowsHomeBase + "')")
	index("Join-Path $base ('" + lockstore.WindowsHomeName + "' + $env:HERMES_DATA_DIR_SUFFIX)")
	index(`if ("$env:HERMES_HOME".Trim())`)
	if check := index("Assert-CommandLine '-HermesHome' $HermesHome"); home > check {
		t.Error("the home is checked for control characters before the default is chosen")
	}
	grant := index("secedit /configure")
	index("SeServiceLogonRight = $list")
	index("Log on as a service, add $($me.Name)")
	if create := index("New-Service"); grant > create {
		t.Error("the right to log on as a service is granted after the service is created")
	}
	index(`if ($_.Extension -eq '.js') { $text = $text.Replace('\\', '\') }`)
}

// packagedScript returns the packaged PowerShell script and index, which
// finds a text in it and fails the test where the script lacks it.
func packagedScript(t *testing.T) (script string, index func(string) int) {
	t.Helper()
	files, err := DeployFiles(hermesWindowsHome)
	if err != nil {
		t.Fatal(err)
	}
	script = string(files["windows/install-service.ps1"])
	return script, func(s string) int {
		t.Helper()
		i := strings.Index(script, s)
		if i < 0 {
			t.Errorf("the script lacks %s", s)
		}
		return i
	}
}

// hermesWindowsHome is Hermes' Windows home as the supervisor resolves it:
// the packaged script must default to the same place.
var hermesWindowsHome = WindowsHome{Base: lockstore.WindowsHomeBase, Name: lockstore.WindowsHomeName}

// The packaged script installs a named profile's service as install does:
// -HermesProfile (or a -HermesHome of the shape <root>\profiles\<name>)
// names the service hermes-supervisor-<name> and runs hermes -p <name>;
// it takes a profile name exactly when Hermes' -p does (lockstore's
// rule), and refuses a deleted profile, a missing one, and -HermesHome
// with -HermesProfile, all before anything is created.
func TestPowershellScriptProfile(t *testing.T) {
	script, index := packagedScript(t)
	index("[string]$HermesProfile = ''")
	// The names, as NameFor makes them; the gateway's -p, as install's.
	index("$name = '" + NameFor("") + "'")
	index(`$name = "$name-$profileName"`)
	index(`$gatewayProfile = @('-p', $profileName)`)
	index(`'--', $hermes) + $gatewayProfile + @('gateway', 'run')`)
	index(`-DisplayName $display`)
	index(`-Description "Supervises the Hermes Agent gateway for $HermesHome ($name)."`)
	create := index("New-Service")
	for _, refusal := range []string{"pass -HermesHome or -HermesProfile, not both", `profiles\.deleted\$HermesProfile`, "does not exist: no directory"} {
		if i := index(refusal); i > create {
			t.Errorf("the script refuses %q only after it created the service", refusal)
		}
	}
	if resolve, check := index(`$HermesHome = Join-Path $root "profiles\$HermesProfile"`), index("Assert-CommandLine '-HermesHome' $HermesHome"); resolve > check {
		t.Error("the profile's home is chosen after the home is checked for control characters")
	}

	// The script's profile id and reserved names judge as Hermes' -p.
	_, rest, _ := strings.Cut(script, "$profileId = '")
	pattern, _, _ := strings.Cut(rest, "'\n")
	if !strings.HasSuffix(pattern, `\z`) {
		t.Errorf("the script's profile id %q does not end in \\z: .NET's $ also matches before a final newline", pattern)
	}
	id, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("the script's profile id %q: %v", pattern, err)
	}
	_, rest, _ = strings.Cut(script, "$reserved = @(")
	list, _, _ := strings.Cut(rest, ")")
	var reserved []string
	for _, q := range strings.Split(list, ", ") {
		reserved = append(reserved, strings.Trim(q, "'"))
	}
	for _, name := range []string{"work", "family-2", "a_b", "0", "default", strings.Repeat("a", 64), strings.Repeat("a", 65),
		"Work", "test", "sudo", "hermes", "-x", "_x", "work\n", "wörk", "a.b", `..\x`, ""} {
		script := id.MatchString(name) && !slices.Contains(reserved, name)
		hermes := lockstore.ValidateProfileName(name) == nil
		if script != hermes {
			t.Errorf("-HermesProfile %q: the script takes it: %v; Hermes' -p: %v", name, script, hermes)
		}
	}
}

// The packaged script takes -Config and -StopTimeout as install takes
// --config and --stop-timeout, and pins no stop timeout of its own: one
// pinned at 75 s overrode the stop_timeout of the home's config file,
// which the service reads. Its checks of both judge as install and run
// do, and come before anything is created.
func TestPowershellScriptConfigAndStopTimeout(t *testing.T) {
	script, index := packagedScript(t)
	index("[string]$Config = ''")
	index("[string]$StopTimeout = ''")
	_, argv, _ := strings.Cut(script, "$argv = ")
	argv, _, _ = strings.Cut(argv, "\n")
	if strings.Contains(argv, "--stop-timeout") {
		t.Errorf("the script pins a stop timeout of its own, over the config file's: %s", argv)
	}
	if !strings.Contains(argv, "@('--home', $HermesHome) + $configArgs + @('run', '--service') + $stopArgs + @('--control-user'") {
		t.Errorf("the script's command line does not put --config before run and --stop-timeout after it: %s", argv)
	}
	index("$configArgs = @('--config', $Config)")
	// A file naming what the command line pins (the home after --home, the
	// gateway after --) is refused rather than overridden unseen.
	index("foreach ($key in @('home', 'command'))")
	if keys, pinned := index("$keys -ccontains $key"), index("$configArgs = @('--config', $Config)"); keys > pinned {
		t.Error("the script names the config file before it checks the file's keys")
	}
	index("$stopArgs = @('--stop-timeout', $StopTimeout)")
	create := index("New-Service")
	for _, check := range []string{"Assert-CommandLine '-Config' $Config", "-Config: there is no file", "which the service's command line overrides", "-StopTimeout: '$StopTimeout' is no positive duration"} {
		if i := index(check); i > create {
			t.Errorf("the script checks %q only after it created the service", check)
		}
	}

	pattern := func(before string) *regexp.Regexp {
		t.Helper()
		_, rest, _ := strings.Cut(script, before+" '")
		p, _, _ := strings.Cut(rest, "'")
		re, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("the script's pattern %q: %v", p, err)
		}
		return re
	}
	// A duration the script takes is one run takes: Go's, positive.
	duration := pattern("$StopTimeout -cnotmatch")
	nonzero := regexp.MustCompile(`[1-9]`)
	for _, v := range []string{"90s", "1m15s", "2m30s", "1.5h", ".5s", "5.s", "10ms", "100us", "0.1s", "0s1m", "1h0m0s",
		"0s", "0.0s", "90", "s", "-1s", "+1s", "1d", "90 s", " 90s", "90s ", "90s\n", "1e3s", "1,5s", "٩٠s", "1µs", "", "."} {
		d, err := time.ParseDuration(v)
		run := err == nil && d > 0 && !strings.ContainsAny(v, "+µμ")
		took := duration.MatchString(v) && nonzero.MatchString(v)
		if took != run {
			t.Errorf("-StopTimeout %q: the script takes it: %v; run's --stop-timeout: %v", v, took, run)
		}
	}
	// A config path the script takes is a full one: from a drive's root or
	// a share's, never relative to the current drive or directory.
	full := pattern("$Config -notmatch")
	for v, want := range map[string]bool{
		`C:\hermes\supervisor.json`: true, `d:\x.json`: true, `\\server\share\x.json`: true,
		`x.json`: false, `.\x.json`: false, `\x.json`: false, `C:x.json`: false, `\\\x`: false, `1:\x`: false, ``: false,
	} {
		if got := full.MatchString(v); got != want {
			t.Errorf("-Config %q: the script takes it: %v, want %v", v, got, want)
		}
	}
}
