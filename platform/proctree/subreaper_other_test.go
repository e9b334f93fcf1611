//go:build unix && !linux

package proctree

// becomeSubreaper is a no-op where the OS has no subreapers; waitGone then
// watches the pid instead of reaping it.
func becomeSubreaper() {}
