package service

import "golang.org/x/sys/windows"

func newManager() Manager { return SCM{} }

func isAdmin() bool { return windows.GetCurrentProcessToken().IsElevated() }
