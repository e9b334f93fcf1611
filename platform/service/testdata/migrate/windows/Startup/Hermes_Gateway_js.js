// Hermes Agent Gateway - Messaging Platform Integration
var fso = new ActiveXObject("Scripting.FileSystemObject");
var target = "C:\\Users\\Ann Lee\\AppData\\Local\\hermes\\gateway-service\\Hermes_Gateway.js";
if (fso.FileExists(target)) {
    var sh = new ActiveXObject("WScript.Shell");
    sh.Run("wscript.exe \"C:\\Users\\Ann Lee\\AppData\\Local\\hermes\\gateway-service\\Hermes_Gateway.js\"", 0, false);
}
