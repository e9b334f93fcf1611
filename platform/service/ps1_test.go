package service

import (
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// The packaged PowerShell script supervises the home Hermes uses on
// Windows, %LOCALAPPDATA%\hermes (as DefaultHermesHome resolves it), grants
// the account the right to log on as a service before the service is
// created, and finds Hermes' JScript Startup entry.
func TestPowershellScriptDefaults(t *testing.T) {
	files, err := DeployFiles(hermesWindowsHome)
	if err != nil {
		t.Fatal(err)
	}
	script := string(files["windows/install-service.ps1"])
	index := func(s string) int {
		t.Helper()
		i := strings.Index(script, s)
		if i < 0 {
			t.Errorf("the script lacks %s", s)
		}
		return i
	}
	if strings.Contains(script, "'.hermes'") {
		t.Error(`the script still defaults to .hermes under the user profile, a home Hermes does not use on Windows`)
	}
	home := index("[Environment]::GetEnvironmentVariable('" + lockstore.WindowsHomeBase + "')")
	index("Join-Path $base ('" + lockstore.WindowsHomeName + "' + $env:HERMES_DATA_DIR_SUFFIX)")
	index(`if ("$env:HERMES_HOME".Trim())`)
	if check := index("Assert-Safe '-HermesHome' $HermesHome"); home > check {
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

// hermesWindowsHome is Hermes' Windows home as the supervisor resolves it:
// the packaged script must default to the same place.
var hermesWindowsHome = WindowsHome{Base: lockstore.WindowsHomeBase, Name: lockstore.WindowsHomeName}
