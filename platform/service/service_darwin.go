package service

// New returns the service manager of this system: launchd.
func New() Manager { return Launchd{} }
