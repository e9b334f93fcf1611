package service

// New returns the service manager of this system: systemd.
func New() Manager { return Systemd{} }
