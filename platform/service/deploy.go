package service

import (
	"fmt"
	"strings"
	"time"
)

// packaged is the configuration of the files under deploy/: the binary
// where a package puts it, and no home, lock dir or PATH, which the
// supervisor then resolves at run time from the service's user (systemd
// and launchd set HOME).
func packaged(exe string, system bool) Config {
	c := Config{Exe: exe, System: system, StopTimeout: defaultStopTimeout}
	if system {
		c.User = "hermes"
	}
	return c
}

// defaultStopTimeout is the supervisor's default stop timeout, which the
// packaged definitions pin as install does (supervisor.DefaultStopTimeout;
// this package sits below it).
const defaultStopTimeout = 75 * time.Second

// DeployFiles renders every file under deploy/, by path relative to it,
// from the same templates `install` renders: packagers ship them and
// configuration management reviews them; `make deploy` writes them.
func DeployFiles() map[string][]byte {
	return map[string][]byte{
		"systemd/system/" + Name + ".service": Systemd{}.Unit(packaged("/usr/bin/hermes-supervisor", true)),
		"systemd/user/" + Name + ".service":   Systemd{}.Unit(packaged("/usr/bin/hermes-supervisor", false)),
		"launchd/" + Label + ".plist":         Launchd{}.Plist(packaged("/usr/local/bin/hermes-supervisor", false)),
		"windows/install-service.ps1":         powershellInstall(),
	}
}

// powershellInstall renders a script that creates the Windows service as
// `install` does through the SCM API: the same command line with the
// gateway resolved and pinned, automatic start, the installing user's
// account (never LocalSystem), the same DACL and recovery actions, also
// after a non-zero exit.
func powershellInstall() []byte {
	var b strings.Builder
	args := scmArgs(packaged(`C:\hermes-supervisor.exe`, true), "")
	sddl := strings.Replace(serviceSDDL("SID"), "SID)", "$sid)", 1)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
	}
	var actions []string
	for _, d := range recoveryDelays {
		actions = append(actions, fmt.Sprintf("restart/%d", d.Milliseconds()))
	}
	fmt.Fprintf(&b, `# Written by make deploy from the templates `+"`hermes-supervisor install`"+` renders.
# Installs hermes-supervisor as the Windows service %[1]s, as
# `+"`hermes-supervisor install`"+` does: run it in an elevated PowerShell.
#   .\install-service.ps1 -Exe 'C:\Program Files\hermes-supervisor\hermes-supervisor.exe'
# -Migrate also ends and disables Hermes' own Scheduled Tasks %[2]s[_<suffix>]
# of this home and moves its Startup-folder launcher aside.
param(
    [Parameter(Mandatory = $true)][string]$Exe,
    [string]$HermesHome = (Join-Path $env:USERPROFILE '.hermes'),
    [switch]$Migrate,
    [int]$WaitSeconds = 90
)
$ErrorActionPreference = 'Stop'
$name = '%[1]s'

# Hermes keeps each task's launcher in <home>\gateway-service, named after
# the task: those of this home are this home's tasks; other profiles' tasks
# and Startup entries are left alone.
$launcherDir = Join-Path $HermesHome 'gateway-service'
$tasks = @(Get-ChildItem -Path $launcherDir -Filter '%[2]s*' -File -ErrorAction SilentlyContinue |
    Where-Object { $_.Extension -in '.vbs', '.js', '.cmd' } | ForEach-Object { $_.BaseName } | Sort-Object -Unique)
$startup = [Environment]::GetFolderPath('Startup')
$entries = @(Get-ChildItem -Path $startup -Filter '%[2]s*' -File -ErrorAction SilentlyContinue |
    Where-Object { "$(Get-Content -Raw $_.FullName)".ToLower().Contains("$launcherDir\".ToLower()) })
foreach ($task in $tasks) {
    if ($Migrate) {
        schtasks /End /TN $task 2>$null
        schtasks /Change /TN $task /Disable 2>$null
    } else {
        Write-Warning "Hermes' own Scheduled Task $task also restarts the gateway of this home: rerun with -Migrate to disable it"
    }
}
foreach ($entry in $entries) {
    if ($Migrate) {
        # Windows opens every file in the Startup folder at logon.
        Move-Item -Path $entry.FullName -Destination (Join-Path $launcherDir ($entry.Name + '.startup-disabled')) -Force
    } else {
        Write-Warning "Hermes' Startup-folder launcher $($entry.FullName) also starts the gateway of this home: rerun with -Migrate to move it aside"
    }
}

# The service runs as you, never as LocalSystem (docs/security.md): the
# service manager stores your password to log on as you. The gateway is
# found now, on your PATH, and pinned: a service gets no PATH of yours.
$me = [System.Security.Principal.WindowsIdentity]::GetCurrent()
$sid = $me.User.Value
$cred = Get-Credential -UserName $me.Name -Message 'The hermes-supervisor service runs as you: your Windows password'
$hermes = (Get-Command hermes -CommandType Application -ErrorAction Stop).Source
# The installing user may also use the control pipe (status, stop, restart).
$argv = @('--home', $HermesHome) + @(%[3]s) + @('--control-user', $sid, '--', $hermes, 'gateway', 'run')
$quote = { param($a) if ($a -match '[\s"]') { '"' + ($a -replace '"', '\"') + '"' } else { $a } }
$bin = (@($Exe) + $argv | ForEach-Object { & $quote $_ }) -join ' '

if (Get-Service -Name $name -ErrorAction SilentlyContinue) {
    # A reinstall must not leave the old binary and arguments running.
    Stop-Service -Name $name -ErrorAction SilentlyContinue
    sc.exe config $name binPath= $bin start= auto obj= $me.Name password= $cred.GetNetworkCredential().Password | Out-Null
} else {
    New-Service -Name $name -BinaryPathName $bin -DisplayName 'Hermes supervisor' -StartupType Automatic -Credential $cred `+"`"+`
        -Description "Supervises the Hermes Agent gateway for $HermesHome (hermes-supervisor)." | Out-Null
}
# Your PATH for the gateway's own tools; you may start, stop and query the
# service without an elevated shell. Without the "Log on as a service"
# right (secpol.msc; `+"`hermes-supervisor install`"+` grants it) the start fails
# with error 1069.
Set-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$name" -Name Environment -Type MultiString -Value @("PATH=$env:PATH")
sc.exe sdset $name "%[7]s" | Out-Null
# Restart after %[4]s; a day without failures resets the count; also
# after a non-zero exit, not only a crash.
sc.exe failure $name reset= %[5]d actions= %[6]s | Out-Null
sc.exe failureflag $name 1 | Out-Null
Start-Service -Name $name

$deadline = (Get-Date).AddSeconds($WaitSeconds)
while ((Get-Service -Name $name).Status -ne 'Running') {
    if ((Get-Date) -gt $deadline) {
        Get-Content (Join-Path $HermesHome 'hermes-supervisor.log') -Tail 15 -ErrorAction SilentlyContinue
        throw "service $name is not running after $WaitSeconds s: fix the cause (see the log above), then Start-Service $name"
    }
    Start-Sleep -Milliseconds 200
}
Write-Output "service $name is running"
`, Name, hermesTask, strings.Join(quoted, ", "), recoveryText(), recoveryReset, strings.Join(actions, "/"), sddl)
	return []byte(b.String())
}

func recoveryText() string {
	var parts []string
	for _, d := range recoveryDelays {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ", then ")
}
