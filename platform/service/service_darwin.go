package service

import "os"

func newManager() Manager { return Launchd{} }

// launchd bounds a stop itself (ExitTimeOut), which our wait follows:
// Config.StopWait goes unused.
const waitsOnStop = false

func isAdmin() bool { return os.Geteuid() == 0 }
