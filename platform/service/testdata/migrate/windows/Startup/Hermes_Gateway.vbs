' Hermes Agent Gateway - Messaging Platform Integration
Option Explicit
Dim fso, sh, target
target = "C:\Users\Ann Lee\AppData\Local\hermes\gateway-service\Hermes_Gateway.vbs"
Set fso = CreateObject("Scripting.FileSystemObject")
If Not fso.FileExists(target) Then WScript.Quit 0
Set sh = CreateObject("WScript.Shell")
sh.Run "wscript.exe ""C:\Users\Ann Lee\AppData\Local\hermes\gateway-service\Hermes_Gateway.vbs""", 0, False
