//go:build !linux

package conformance

import "errors"

// setComm: only Linux shows Hermes a process name it reads as text.
func setComm(string) error { return errors.ErrUnsupported }
