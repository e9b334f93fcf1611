package service

import "os"

// New returns the service manager of this system: systemd.
func New() Manager { return Systemd{} }

func isAdmin() bool { return os.Geteuid() == 0 }
