# Written by make deploy from the templates `hermes-supervisor install` renders.
# Installs hermes-supervisor as the Windows service hermes-supervisor, as
# `hermes-supervisor install` does: run it in an elevated PowerShell.
#   .\install-service.ps1 -Exe 'C:\Program Files\hermes-supervisor\hermes-supervisor.exe'
# -Migrate also ends and disables Hermes' own Scheduled Tasks Hermes_Gateway[_<suffix>]
# of this home and moves its Startup-folder launcher aside.
param(
    [Parameter(Mandatory = $true)][string]$Exe,
    [string]$HermesHome = (Join-Path $env:USERPROFILE '.hermes'),
    [switch]$Migrate,
    [int]$WaitSeconds = 90
)
$ErrorActionPreference = 'Stop'
$name = 'hermes-supervisor'
# Nothing written into the service's definition may hold a control
# character or a line separator (docs/security.md).
$unsafe = '[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]'
function Assert-Safe([string]$what, [string]$value) {
    if ($value -match $unsafe) { throw "$what holds a control character or line separator: fix it, nothing was changed" }
}
Assert-Safe '-Exe' $Exe
Assert-Safe '-HermesHome' $HermesHome

# Hermes keeps each task's launcher in <home>\gateway-service, named after
# the task: those of this home are this home's tasks; other profiles' tasks
# and Startup entries are left alone.
$launcherDir = Join-Path $HermesHome 'gateway-service'
$tasks = @(Get-ChildItem -Path $launcherDir -Filter 'Hermes_Gateway*' -File -ErrorAction SilentlyContinue |
    Where-Object { $_.Extension -in '.vbs', '.js', '.cmd' } | ForEach-Object { $_.BaseName } | Sort-Object -Unique)
$startup = [Environment]::GetFolderPath('Startup')
$entries = @(Get-ChildItem -Path $startup -Filter 'Hermes_Gateway*' -File -ErrorAction SilentlyContinue |
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
Assert-Safe 'the hermes found on PATH' $hermes
Assert-Safe 'PATH' $env:PATH
# The installing user may also use the control pipe (status, stop, restart).
$argv = @('--home', $HermesHome) + @('run', '--stop-timeout', '1m15s', '--service') + @('--control-user', $sid, '--', $hermes, 'gateway', 'run')
# Quoted as CommandLineToArgvW reads it back: backslashes before a quote
# and at the end of a quoted word are doubled.
$quote = { param($a) if ($a -ne '' -and $a -notmatch '[\s"]') { $a } else { '"' + (($a -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"' } }
$bin = (@($Exe) + $argv | ForEach-Object { & $quote $_ }) -join ' '

if (Get-Service -Name $name -ErrorAction SilentlyContinue) {
    # A reinstall must not leave the old binary and arguments running.
    Stop-Service -Name $name -ErrorAction SilentlyContinue
    sc.exe config $name binPath= $bin start= auto obj= $me.Name password= $cred.GetNetworkCredential().Password | Out-Null
} else {
    New-Service -Name $name -BinaryPathName $bin -DisplayName 'Hermes supervisor' -StartupType Automatic -Credential $cred `
        -Description "Supervises the Hermes Agent gateway for $HermesHome (hermes-supervisor)." | Out-Null
}
# Your PATH for the gateway's own tools; you may start, stop and query the
# service without an elevated shell. Without the "Log on as a service"
# right (secpol.msc; `hermes-supervisor install` grants it) the start fails
# with error 1069.
Set-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$name" -Name Environment -Type MultiString -Value @("PATH=$env:PATH")
sc.exe sdset $name "D:(A;;CCLCSWRPWPDTLOCRRC;;;SY)(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;BA)(A;;CCLCSWLOCRRC;;;IU)(A;;CCLCSWLOCRRC;;;SU)(A;;CCLCSWRPWPLOCRRC;;;$sid)" | Out-Null
# Restart after 5s, then 10s, then 1m0s; a day without failures resets the count; also
# after a non-zero exit, not only a crash.
sc.exe failure $name reset= 86400 actions= restart/5000/restart/10000/restart/60000 | Out-Null
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
