# Written by make deploy from the templates `hermes-supervisor install` renders.
# Installs hermes-supervisor as the Windows service hermes-supervisor, as
# `hermes-supervisor install` does: run it in an elevated PowerShell.
#   .\install-service.ps1 -Exe 'C:\Program Files\hermes-supervisor\hermes-supervisor.exe'
# -Migrate also ends and disables Hermes' own Scheduled Task Hermes_Gateway.
param(
    [Parameter(Mandatory = $true)][string]$Exe,
    [string]$HermesHome = (Join-Path $env:USERPROFILE '.hermes'),
    [switch]$Migrate,
    [int]$WaitSeconds = 90
)
$ErrorActionPreference = 'Stop'
$name = 'hermes-supervisor'

if ($Migrate) {
    schtasks /End /TN 'Hermes_Gateway' 2>$null
    schtasks /Change /TN 'Hermes_Gateway' /Disable 2>$null
} elseif (Get-ScheduledTask -TaskName 'Hermes_Gateway' -ErrorAction SilentlyContinue) {
    Write-Warning "Hermes' own Scheduled Task Hermes_Gateway also restarts the gateway of this home: rerun with -Migrate to disable it"
}

# The installing user may also use the control pipe (status, stop, restart).
$sid = [System.Security.Principal.WindowsIdentity]::GetCurrent().User.Value
$argv = @('--home', $HermesHome) + @('run', '--stop-timeout', '1m15s', '--service') + @('--control-user', $sid)
$quote = { param($a) if ($a -match '[\s"]') { '"' + ($a -replace '"', '\"') + '"' } else { $a } }
$bin = (@($Exe) + $argv | ForEach-Object { & $quote $_ }) -join ' '

if (Get-Service -Name $name -ErrorAction SilentlyContinue) {
    sc.exe config $name binPath= $bin start= auto | Out-Null
} else {
    New-Service -Name $name -BinaryPathName $bin -DisplayName 'Hermes supervisor' -StartupType Automatic `
        -Description "Supervises the Hermes Agent gateway for $HermesHome (hermes-supervisor)." | Out-Null
}
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
