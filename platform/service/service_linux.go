package service

import "os"

func newManager() Manager { return Systemd{} }

func isAdmin() bool { return os.Geteuid() == 0 }
