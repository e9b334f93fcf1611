' Hermes Agent Gateway - Messaging Platform Integration
Option Explicit
Dim sh, env, existing_pp
Set sh = CreateObject("WScript.Shell")
Set env = sh.Environment("PROCESS")
env.Item("HERMES_HOME") = "C:\Users\Ann Lee\AppData\Local\hermes\profiles\work"
env.Item("HERMES_GATEWAY_DETACHED") = "1"
sh.Run """C:\Users\Ann Lee\AppData\Local\hermes\hermes-agent\venv\Scripts\python.exe"" -m hermes_cli.main --profile work gateway run", 0, False
