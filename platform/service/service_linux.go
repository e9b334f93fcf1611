package service

import "os"

func newManager() Manager { return Systemd{} }

// systemd bounds a stop itself (TimeoutStopSec, with the extensions we
// pass up): `systemctl stop` waits, and Config.StopWait goes unused.
const waitsOnStop = false

func isAdmin() bool { return os.Geteuid() == 0 }
