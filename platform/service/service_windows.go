package service

import "golang.org/x/sys/windows"

func newManager() Manager { return SCM{} }

// The SCM does not bound a stop: our wait for a stopped service is
// Config.StopWait.
const waitsOnStop = true

func isAdmin() bool { return windows.GetCurrentProcessToken().IsElevated() }
