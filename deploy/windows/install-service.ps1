# Written by make deploy from the templates `hermes-supervisor install` renders.
# Installs hermes-supervisor as the Windows service hermes-supervisor (hermes-supervisor-<profile>
# for a named profile's home), as `hermes-supervisor install` does: run it in
# an elevated PowerShell.
#   .\install-service.ps1 -Exe 'C:\Program Files\hermes-supervisor\hermes-supervisor.exe'
#   .\install-service.ps1 -Exe ... -HermesProfile work   # <root>\profiles\work, as hermes -p work
#   .\install-service.ps1 -Exe ... -Config D:\hermes\supervisor.json -StopTimeout 2m
# -Config names a config file elsewhere than <home>\hermes-supervisor.json,
# which the service reads anyway. -StopTimeout pins the stop timeout; without
# it the supervisor takes the config file's stop_timeout at each start, else
# 75 s.
# -Migrate also ends and disables Hermes' own Scheduled Tasks Hermes_Gateway[_<suffix>]
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
# The service manager expands %NAME% in a service's command line, and
# nothing there escapes a %: a value on it may hold none.
function Assert-CommandLine([string]$what, [string]$value) {
    Assert-Safe $what $value
    if ($value.Contains('%')) { throw "$what holds a %, which the service manager would expand as %NAME% on the service's command line: use a path without one, nothing was changed" }
}
if ($HermesHome -and $HermesProfile) {
    throw "pass -HermesHome or -HermesProfile, not both: -HermesProfile selects <root>\profiles\<name> of Hermes' default home; nothing was changed"
}
if (-not $HermesHome) {
    # Hermes' own default, as install resolves it: HERMES_HOME when set,
    # else %LOCALAPPDATA%\hermes (with HERMES_DATA_DIR_SUFFIX) of the
    # user running this script, who is the user the service runs as.
    if ("$env:HERMES_HOME".Trim()) {
        $HermesHome = "$env:HERMES_HOME".Trim()
    } else {
        $base = [Environment]::GetEnvironmentVariable('LOCALAPPDATA')
        if (-not $base) { $base = Join-Path $env:USERPROFILE 'AppData\Local' }
        $HermesHome = Join-Path $base ('hermes' + $env:HERMES_DATA_DIR_SUFFIX)
    }
}
# Hermes' profile rules, as `hermes -p` and hermes-supervisor apply them: a
# name is a profile id, matched case-sensitively, that is not reserved; the
# root of a home <root>\profiles\<name> is <root>; `default` is the root.
$profileId = '^[a-z0-9][a-z0-9_-]{0,63}\z'
$reserved = @('hermes', 'test', 'tmp', 'root', 'sudo')
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
    if ($Config -notmatch '^([A-Za-z]:\\|\\\\[^\\])') { throw "-Config: '$Config' is not a full path: pass it as C:\...\hermes-supervisor.json or \\server\share\...; nothing was changed" }
    if (-not (Test-Path -LiteralPath $Config -PathType Leaf)) { throw "-Config: there is no file $Config; nothing was changed" }
    Assert-CommandLine '-Config' $Config
    # The service's command line names the home and the gateway, and they
    # outrank the file's: a file naming either would be overridden unseen.
    $keys = @((Get-Content -Raw -LiteralPath $Config | ConvertFrom-Json).PSObject.Properties | ForEach-Object { $_.Name })
    foreach ($key in @('home', 'command')) {
        if ($keys -ccontains $key) { throw "-Config: $Config sets ""$key"", which the service's command line overrides (its home is -HermesHome's, its gateway the hermes found on PATH): remove the key, or install with hermes-supervisor install --config; nothing was changed" }
    }
    $configArgs = @('--config', $Config)
}
# A positive duration run's --stop-timeout takes (Go's), in a shape that
# neither overflows nor rounds to 0: 90s, 2m30s, 1.5h.
$stopArgs = @()
if ($StopTimeout) {
    if ($StopTimeout -cnotmatch '^(([0-9]{1,5}(\.[0-9]{0,9})?|\.[0-9]{1,9})(s|m|h)|[0-9]{1,5}(ns|us|ms)){1,4}\z' -or $StopTimeout -notmatch '[1-9]') { throw "-StopTimeout: '$StopTimeout' is no positive duration the script takes: pass one as 90s, 2m30s or 1.5h (at most 4 parts of 5 digits, a fraction only on s, m or h); nothing was changed" }
    $stopArgs = @('--stop-timeout', $StopTimeout)
}
# One service per home: a named profile's has a name of its own (as
# Hermes' task Hermes_Gateway_<profile>), so that it never replaces another
# profile's; its gateway runs as hermes -p <profile>, as Hermes' own
# launchers run it.
$profileName = Get-ProfileOf $HermesHome.TrimEnd('\')
$name = 'hermes-supervisor'
$display = 'Hermes supervisor'
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
$tasks = @(Get-ChildItem -Path $launcherDir -Filter 'Hermes_Gateway*' -File -ErrorAction SilentlyContinue |
    Where-Object { $_.Extension -in '.vbs', '.js', '.cmd' } | ForEach-Object { $_.BaseName } | Sort-Object -Unique)
$startup = [Environment]::GetFolderPath('Startup')
# A JScript entry (Hermes writes one where VBScript is absent) doubles
# every backslash of the path it starts.
$entries = @(Get-ChildItem -Path $startup -Filter 'Hermes_Gateway*' -File -ErrorAction SilentlyContinue |
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
$argv = @('--home', $HermesHome) + $configArgs + @('run', '--service') + $stopArgs + @('--control-user', $sid, '--', $hermes) + $gatewayProfile + @('gateway', 'run')
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
    New-Service -Name $name -BinaryPathName $bin -DisplayName $display -StartupType Automatic -Credential $cred `
        -Description "Supervises the Hermes Agent gateway for $HermesHome ($name)." | Out-Null
}
# Your PATH for the gateway's own tools; you may start, stop and query the
# service without an elevated shell.
Set-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$name" -Name Environment -Type MultiString -Value @("PATH=$env:PATH")
sc.exe sdset $name "D:(A;;CCLCSWRPWPDTLOCRRC;;;SY)(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;BA)(A;;CCLCSWLOCRRC;;;IU)(A;;CCLCSWLOCRRC;;;SU)(A;;CCLCSWRPWPLOCRRC;;;$sid)" | Out-Null
if ($LASTEXITCODE -ne 0) { throw "sc.exe sdset $name failed (exit $LASTEXITCODE): run this script again from an administrator shell" }
# Restart after 5s, then 10s, then 1m0s; a day without failures resets the count; also
# after a non-zero exit, not only a crash.
sc.exe failure $name reset= 86400 actions= restart/5000/restart/10000/restart/60000 | Out-Null
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
