package service

import "os"

// New returns the service manager of this system: launchd.
func New() Manager { return Launchd{} }

func isAdmin() bool { return os.Geteuid() == 0 }
