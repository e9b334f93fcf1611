package service

import (
	"strings"
	"testing"
)

// Windows PowerShell 5.1 passes a native argument that holds quotes
// without escaping them, so the quoted program path the script builds
// reaches sc.exe cut at its first space: the script must hand it to the
// service manager through a cmdlet or CIM, never on sc.exe's command
// line, and must stop on any sc.exe call that fails rather than start the
// service as it was.
func TestPowershellScriptNativeCalls(t *testing.T) {
	files, err := DeployFiles(hermesWindowsHome)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(files["windows/install-service.ps1"]), "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.Contains(l, "$bin") && strings.HasPrefix(l, "sc.exe") {
			t.Errorf("line %d passes the quoted program path to sc.exe: %s", i+1, l)
		}
		if strings.HasPrefix(l, "sc.exe") {
			if i+1 >= len(lines) || !strings.Contains(lines[i+1], "$LASTEXITCODE -ne 0") || !strings.Contains(lines[i+1], "throw") {
				t.Errorf("line %d runs sc.exe without stopping when it fails: %s", i+1, l)
			}
		}
	}
	script := strings.Join(lines, "\n")
	for _, want := range []string{"-MethodName Change", "PathName = $bin", "$r.ReturnValue -ne 0"} {
		if !strings.Contains(script, want) {
			t.Errorf("the reinstall does not update the service through Win32_Service.Change: no %q", want)
		}
	}
}
