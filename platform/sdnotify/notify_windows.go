package sdnotify

import (
	"errors"
)

// Notify does nothing on Windows: the service control manager learns of
// our state through the service handler instead.
func Notify(state string) error { return nil }

// Send fails on Windows, which has no AF_UNIX datagrams.
func Send(addr, state string) error {
	if addr == "" {
		return nil
	}
	return errors.ErrUnsupported
}
