// Hermes Agent Gateway - Messaging Platform Integration
var sh, env, existing_pp;
sh = WScript.CreateObject("WScript.Shell");
env = sh.Environment("PROCESS");
env("HERMES_HOME") = "C:\\Users\\Ann Lee\\AppData\\Local\\hermes\\profiles\\work";
sh.Run("python.exe -m hermes_cli.main --profile work gateway run", 0, false);
