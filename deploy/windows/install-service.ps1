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

# The service runs as you, never as LocalSystem (docs/security.md): the
# service manager stores your password to log on as you. The gateway is
# found now, on your PATH, and pinned: a service gets no PATH of yours.
$me = [System.Security.Principal.WindowsIdentity]::GetCurrent()
$sid = $me.User.Value
$cred = Get-Credential -UserName $me.Name -Message 'The hermes-supervisor service runs as you: your Windows password'
$hermes = (Get-Command hermes -CommandType Application -ErrorAction Stop).Source
# The installing user may also use the control pipe (status, stop, restart).
$argv = @('--home', $HermesHome) + @('run', '--stop-timeout', '1m15s', '--service') + @('--control-user', $sid, '--', $hermes, 'gateway', 'run')
$quote = { param($a) if ($a -match '[\s"]') { '"' + ($a -replace '"', '\"') + '"' } else { $a } }
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
