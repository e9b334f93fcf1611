package service

import "os"

func newManager() Manager { return Launchd{} }

func isAdmin() bool { return os.Geteuid() == 0 }
