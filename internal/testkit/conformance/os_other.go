//go:build !linux

package conformance

// onLinux: start times are rounded create times in centiseconds, and
// Hermes cannot see the stopped state.
const onLinux = false
