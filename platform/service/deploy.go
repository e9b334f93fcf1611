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

// WindowsHome is where Hermes keeps its home on Windows: the environment
// variable naming the base directory, and the home's name in it. The caller
// passes Hermes' own (lockstore's), so the packaged script defaults to the
// home the supervisor resolves; this package sits below the Hermes rules.
type WindowsHome struct{ Base, Name string }

// DeployFiles renders every file under deploy/, by path relative to it,
// from the same templates `install` renders: packagers ship them and
// configuration management reviews them; `make deploy` writes them.
func DeployFiles(win WindowsHome) (map[string][]byte, error) {
	files := map[string][]byte{}
	for rel, render := range map[string]func() ([]byte, error){
		"systemd/system/" + Name + ".service": func() ([]byte, error) { return Systemd{}.Unit(packaged("/usr/bin/hermes-supervisor", true)) },
		"systemd/user/" + Name + ".service":   func() ([]byte, error) { return Systemd{}.Unit(packaged("/usr/bin/hermes-supervisor", false)) },
		"launchd/" + Label + ".plist":         func() ([]byte, error) { return Launchd{}.Plist(packaged("/usr/local/bin/hermes-supervisor", false)) },
		"windows/install-service.ps1":         func() ([]byte, error) { return powershellInstall(packaged(`C:\hermes-supervisor.exe`, true), win) },
	} {
		data, err := render()
		if err != nil {
			return nil, fmt.Errorf("render deploy/%s: %w", rel, err)
		}
		files[rel] = data
	}
	return files, nil
}

// psQuote writes s as a PowerShell single-quoted string. PowerShell ends
// such a string at any of the four single quotes it knows (', and the
// typographic U+2018 to U+201B), and reads each one doubled as itself, so
// every one is doubled. A value that checkValues refuses is refused here
// too: a script is a privileged file as much as a unit is.
func psQuote(s string, what string, from Origin) (string, error) {
	if err := checkValue(what, s, from); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		if psSingleQuote(r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// psSingleQuote reports whether PowerShell's tokenizer takes r for a
// single quote.
func psSingleQuote(r rune) bool { return r == '\'' || r >= '\u2018' && r <= '\u201b' }

// psProfileID is Hermes' profile id (_PROFILE_ID_RE) as .NET reads it,
// and reservedProfiles the names Hermes' -p refuses (_RESERVED_NAMES):
// the packaged script judges a profile as lockstore does, which this
// package sits below (ps1_test.go holds them to lockstore's).
const psProfileID = `^[a-z0-9][a-z0-9_-]{0,63}\z`

// psFullPath is what the packaged script takes as -Config: a path from a
// drive's root or a UNC share's, as install refuses any other (.NET's
// IsPathRooted also takes \x and C:x, which depend on the current drive
// and directory).
const psFullPath = `^([A-Za-z]:\\|\\\\[^\\])`

// psDuration is what the packaged script takes as -StopTimeout: durations
// Go's time.ParseDuration reads, in ASCII digits (.NET's \d matches any
// script's) and without a sign or µ (the script's text may be read in the
// ANSI code page), narrowed so that run never refuses one the script
// took: at most four parts of five digits cannot pass 2562047h, where Go
// overflows, and a fraction of nine digits at most, on s, m or h only, is
// a whole number of nanoseconds, so that any digit but 0 (the script's
// other test) makes it positive, where Go truncates 0.5ns to 0.
const psDuration = `^(([0-9]{1,5}(\.[0-9]{0,9})?|\.[0-9]{1,9})(s|m|h)|[0-9]{1,5}(ns|us|ms)){1,4}\z`

// psPinnedKeys are the config file's keys whose values the packaged
// script's service command line overrides (--home, and the gateway after
// --): a -Config file setting one is refused, not silently outranked.
var psPinnedKeys = []string{"home", "command"}

var reservedProfiles = []string{"hermes", "test", "tmp", "root", "sudo"}

// powershellInstall renders a script that creates the Windows service as
// `install` does through the SCM API: the same command line with the
// gateway resolved and pinned, automatic start, the installing user's
// account (never LocalSystem), the same DACL and recovery actions, also
// after a non-zero exit. The values it takes at run time (-Exe,
// -HermesHome, the hermes it finds) are refused there when they hold a
// control character, as install refuses them.
func powershellInstall(c Config, win WindowsHome) ([]byte, error) {
	if err := c.checkCommandLine(); err != nil {
		return nil, err
	}
	var b strings.Builder
	// The stop timeout is the script's -StopTimeout, pinned only when
	// given: install reads the config file to pin it, and without one the
	// supervisor takes the config file's stop_timeout at each start, else
	// its default. Only the supervisor reads a pinned one: the service's
	// stop and pre-shutdown budgets come from the running supervisor's.
	c.StopTimeout = 0
	args := scmArgs(c, "")
	sddl := strings.Replace(serviceSDDL("SID"), "SID)", "$sid)", 1)
	quoted := make([]string, len(args))
	for i, a := range args {
		q, err := psQuote(a, fmt.Sprintf("argument %d of the service's command line", i+1), Origin{})
		if err != nil {
			return nil, err
		}
		quoted[i] = q
	}
	var reserved []string
	for _, r := range reservedProfiles {
		reserved = append(reserved, "'"+r+"'")
	}
	var actions []string
	for _, d := range recoveryDelays {
		actions = append(actions, fmt.Sprintf("restart/%d", d.Milliseconds()))
	}
	fmt.Fprintf(&b, `# Written by make deploy from the templates `+"`hermes-supervisor install`"+` renders.
# Installs hermes-supervisor as the Windows service %[1]s (%[1]s-<profile>
# for a named profile's home), as `+"`hermes-supervisor install`"+` does: run it in
# an elevated PowerShell.
#   .\install-service.ps1 -Exe 'C:\Program Files\hermes-supervisor\hermes-supervisor.exe'
#   .\install-service.ps1 -Exe ... -HermesProfile work   # <root>\profiles\work, as hermes -p work
#   .\install-service.ps1 -Exe ... -Config D:\hermes\supervisor.json -StopTimeout 2m
# -Config names a config file elsewhere than <home>\hermes-supervisor.json,
# which the service reads anyway. -StopTimeout pins the stop timeout; without
# it the supervisor takes the config file's stop_timeout at each start, else
# 75 s.
# -Migrate also ends and disables Hermes' own Scheduled Tasks %[2]s[_<suffix>]
# of this home and moves its Startup-folder launcher aside; other profiles'
# are left alone.
param(
    [Parameter(Mandatory = $true)][string]$Exe,
    [string]$HermesHome = '',
    [string]$HermesProfile = '',
    [string]$Config = '',
    [string]$StopTimeout = '',
    [switch]$Migrate,
    [int]$WaitSeconds = 90
)
$ErrorActionPreference = 'Stop'
# Nothing written into the service's definition may hold a control
# character, a line separator, a bidirectional mark or a noncharacter
# (docs/security.md); .NET matches UTF-16, so a noncharacter past U+FFFF is
# the surrogate pair of its plane's last 1024 code points ending DFFE or
# DFFF.
$unsafe = '[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ufdd0-\ufdef\ufffe\uffff]|[\ud83f\ud87f\ud8bf\ud8ff\ud93f\ud97f\ud9bf\ud9ff\uda3f\uda7f\udabf\udaff\udb3f\udb7f\udbbf\udbff][\udffe\udfff]'
function Assert-Safe([string]$what, [string]$value) {
    if ($value -match $unsafe) { throw "$what holds a control character, line separator, bidirectional mark or noncharacter: fix it, nothing was changed" }
}
# The service manager expands %%NAME%% in a service's command line, and
# nothing there escapes a %%: a value on it may hold none.
function Assert-CommandLine([string]$what, [string]$value) {
    Assert-Safe $what $value
    if ($value.Contains('%%')) { throw "$what holds a %%, which the service manager would expand as %%NAME%% on the service's command line: use a path without one, nothing was changed" }
}
if ($HermesHome -and $HermesProfile) {
    throw "pass -HermesHome or -HermesProfile, not both: -HermesProfile selects <root>\profiles\<name> of Hermes' default home; nothing was changed"
}
if (-not $HermesHome) {
    # Hermes' own default, as install resolves it: HERMES_HOME when set,
    # else %%LOCALAPPDATA%%\%[8]s (with HERMES_DATA_DIR_SUFFIX) of the
    # user running this script, who is the user the service runs as.
    if ("$env:HERMES_HOME".Trim()) {
        $HermesHome = "$env:HERMES_HOME".Trim()
    } else {
        $base = [Environment]::GetEnvironmentVariable('%[9]s')
        if (-not $base) { $base = Join-Path $env:USERPROFILE 'AppData\Local' }
        $HermesHome = Join-Path $base ('%[8]s' + $env:HERMES_DATA_DIR_SUFFIX)
    }
}
# Hermes' profile rules, as `+"`hermes -p`"+` and hermes-supervisor apply them: a
# name is a profile id, matched case-sensitively, that is not reserved; the
# root of a home <root>\profiles\<name> is <root>; `+"`default`"+` is the root.
$profileId = '%[10]s'
$reserved = @(%[11]s)
function Get-ProfileOf([string]$home_) {
    $parent = Split-Path -Parent $home_
    if (-not $parent) { return '' }
    $leaf = Split-Path -Leaf $home_
    if ((Split-Path -Leaf $parent) -ceq 'profiles' -and $leaf -cmatch $profileId -and $reserved -cnotcontains $leaf -and $leaf -cne 'default') { return $leaf }
    return ''
}
if ($HermesProfile) {
    if ($HermesProfile -cnotmatch $profileId -or $reserved -ccontains $HermesProfile) {
        throw "-HermesProfile: '$HermesProfile' is not a Hermes profile name: use 1 to 64 lowercase letters, digits, - and _, starting with a letter or digit, not $($reserved -join ', '); nothing was changed"
    }
    $root = $HermesHome.TrimEnd('\')
    if (Get-ProfileOf $root) { $root = Split-Path -Parent (Split-Path -Parent $root) }
    if ($HermesProfile -cne 'default') {
        $HermesHome = Join-Path $root "profiles\$HermesProfile"
        if (Test-Path -LiteralPath (Join-Path $root "profiles\.deleted\$HermesProfile")) {
            throw "profile $HermesProfile is deleted (Hermes' tombstone $root\profiles\.deleted\$HermesProfile); nothing was changed"
        }
        if (-not (Test-Path -LiteralPath $HermesHome -PathType Container)) {
            throw "profile $HermesProfile does not exist: no directory $HermesHome (hermes profile create $HermesProfile); nothing was changed"
        }
    } else {
        $HermesHome = $root
    }
}
Assert-CommandLine '-Exe' $Exe
Assert-CommandLine '-HermesHome' $HermesHome
# The service manager passes on no HERMES_SUPERVISOR_CONFIG: a config file
# is named on the command line, by its full path, as install names it.
$configArgs = @()
if ($Config) {
    if ($Config -notmatch '%[13]s') { throw "-Config: '$Config' is not a full path: pass it as C:\...\hermes-supervisor.json or \\server\share\...; nothing was changed" }
    if (-not (Test-Path -LiteralPath $Config -PathType Leaf)) { throw "-Config: there is no file $Config; nothing was changed" }
    Assert-CommandLine '-Config' $Config
    # The service's command line names the home and the gateway, and they
    # outrank the file's: a file naming either would be overridden unseen.
    $keys = @((Get-Content -Raw -LiteralPath $Config | ConvertFrom-Json).PSObject.Properties | ForEach-Object { $_.Name })
    foreach ($key in @(%[15]s)) {
        if ($keys -ccontains $key) { throw "-Config: $Config sets ""$key"", which the service's command line overrides (its home is -HermesHome's, its gateway the hermes found on PATH): remove the key, or install with hermes-supervisor install --config; nothing was changed" }
    }
    $configArgs = @('--config', $Config)
}
# A positive duration run's --stop-timeout takes (Go's), in a shape that
# neither overflows nor rounds to 0: 90s, 2m30s, 1.5h.
$stopArgs = @()
if ($StopTimeout) {
    if ($StopTimeout -cnotmatch '%[14]s' -or $StopTimeout -notmatch '[1-9]') { throw "-StopTimeout: '$StopTimeout' is no positive duration the script takes: pass one as 90s, 2m30s or 1.5h (at most 4 parts of 5 digits, a fraction only on s, m or h); nothing was changed" }
    $stopArgs = @('--stop-timeout', $StopTimeout)
}
# One service per home: a named profile's has a name of its own (as
# Hermes' task %[2]s_<profile>), so that it never replaces another
# profile's; its gateway runs as hermes -p <profile>, as Hermes' own
# launchers run it.
$profileName = Get-ProfileOf $HermesHome.TrimEnd('\')
$name = '%[1]s'
$display = '%[12]s'
$gatewayProfile = @()
if ($profileName) {
    $name = "$name-$profileName"
    $display = "$display ($profileName)"
    $gatewayProfile = @('-p', $profileName)
}

# Hermes keeps each task's launcher in <home>\gateway-service, named after
# the task: those of this home are this home's tasks; other profiles' tasks
# and Startup entries are left alone.
$launcherDir = Join-Path $HermesHome 'gateway-service'
$tasks = @(Get-ChildItem -Path $launcherDir -Filter '%[2]s*' -File -ErrorAction SilentlyContinue |
    Where-Object { $_.Extension -in '.vbs', '.js', '.cmd' } | ForEach-Object { $_.BaseName } | Sort-Object -Unique)
$startup = [Environment]::GetFolderPath('Startup')
# A JScript entry (Hermes writes one where VBScript is absent) doubles
# every backslash of the path it starts.
$entries = @(Get-ChildItem -Path $startup -Filter '%[2]s*' -File -ErrorAction SilentlyContinue |
    Where-Object {
        $text = "$(Get-Content -Raw $_.FullName)"
        if ($_.Extension -eq '.js') { $text = $text.Replace('\\', '\') }
        $text.ToLower().Contains("$launcherDir\".ToLower())
    })
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
$cred = Get-Credential -UserName $me.Name -Message "The $name service runs as you: your Windows password"
# Without the "Log on as a service" right the service manager cannot log
# on as you and the start fails with error 1069: grant it, as install does.
$rights = Join-Path $env:TEMP 'hermes-supervisor-rights.inf'
secedit /export /areas USER_RIGHTS /cfg $rights | Out-Null
$held = Select-String -Path $rights -Pattern '^SeServiceLogonRight\s*=\s*(.*)$' | Select-Object -First 1
if (-not $held -or ($held.Matches[0].Groups[1].Value -split ',' | ForEach-Object { $_.Trim() }) -notcontains "*$sid") {
    $list = if ($held) { $held.Matches[0].Groups[1].Value + ",*$sid" } else { "*$sid" }
    Set-Content -Path $rights -Encoding Unicode -Value @('[Unicode]', 'Unicode=yes', '[Version]', 'signature="$CHICAGO$"', 'Revision=1', '[Privilege Rights]', "SeServiceLogonRight = $list")
    secedit /configure /db (Join-Path $env:TEMP 'hermes-supervisor-rights.sdb') /cfg $rights /areas USER_RIGHTS | Out-Null
    if ($LASTEXITCODE -ne 0) {
        throw "could not grant $($me.Name) the right to log on as a service: run secpol.msc, open Local Policies > User Rights Assignment > Log on as a service, add $($me.Name), then rerun this script"
    }
}
Remove-Item -Path $rights -ErrorAction SilentlyContinue
$hermes = (Get-Command hermes -CommandType Application -ErrorAction Stop).Source
Assert-CommandLine 'the hermes found on PATH' $hermes
Assert-Safe 'PATH' $env:PATH
# The installing user may also use the control pipe (status, stop, restart).
$argv = @('--home', $HermesHome) + $configArgs + @(%[3]s) + $stopArgs + @('--control-user', $sid, '--', $hermes) + $gatewayProfile + @('gateway', 'run')
# Quoted as CommandLineToArgvW reads it back: backslashes before a quote
# and at the end of a quoted word are doubled.
$quote = { param($a) if ($a -ne '' -and $a -notmatch '[\s"]') { $a } else { '"' + (($a -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"' } }
$bin = (@($Exe) + $argv | ForEach-Object { & $quote $_ }) -join ' '

if (Get-Service -Name $name -ErrorAction SilentlyContinue) {
    # A reinstall must not leave the old binary and arguments running.
    Stop-Service -Name $name -ErrorAction SilentlyContinue
    # Through CIM, not sc.exe: Windows PowerShell 5.1 passes a native
    # argument that holds quotes (the quoted program path) without escaping
    # them, and sc.exe would store a binPath cut at the first space.
    $svc = Get-CimInstance -ClassName Win32_Service -Filter "Name='$name'"
    $r = Invoke-CimMethod -InputObject $svc -MethodName Change -Arguments @{
        PathName = $bin; StartMode = 'Automatic'; StartName = $me.Name; StartPassword = $cred.GetNetworkCredential().Password }
    if ($r.ReturnValue -ne 0) {
        throw "could not update service ${name} (Win32_Service.Change returned $($r.ReturnValue)): remove it with sc.exe delete $name, then run this script again"
    }
} else {
    New-Service -Name $name -BinaryPathName $bin -DisplayName $display -StartupType Automatic -Credential $cred `+"`"+`
        -Description "Supervises the Hermes Agent gateway for $HermesHome ($name)." | Out-Null
}
# Your PATH for the gateway's own tools; you may start, stop and query the
# service without an elevated shell.
Set-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$name" -Name Environment -Type MultiString -Value @("PATH=$env:PATH")
sc.exe sdset $name "%[7]s" | Out-Null
if ($LASTEXITCODE -ne 0) { throw "sc.exe sdset $name failed (exit $LASTEXITCODE): run this script again from an administrator shell" }
# Restart after %[4]s; a day without failures resets the count; also
# after a non-zero exit, not only a crash.
sc.exe failure $name reset= %[5]d actions= %[6]s | Out-Null
if ($LASTEXITCODE -ne 0) { throw "sc.exe failure $name failed (exit $LASTEXITCODE): run this script again from an administrator shell" }
sc.exe failureflag $name 1 | Out-Null
if ($LASTEXITCODE -ne 0) { throw "sc.exe failureflag $name failed (exit $LASTEXITCODE): run this script again from an administrator shell" }
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
`, Name, hermesTask, strings.Join(quoted, ", "), recoveryText(), recoveryReset, strings.Join(actions, "/"), sddl, win.Name, win.Base,
		psProfileID, strings.Join(reserved, ", "), displayName(""), psFullPath, psDuration, "'"+strings.Join(psPinnedKeys, "', '")+"'")
	return []byte(b.String()), nil
}

func recoveryText() string {
	var parts []string
	for _, d := range recoveryDelays {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ", then ")
}
