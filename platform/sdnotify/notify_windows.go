package sdnotify

import (
	"errors"
)

// notify does nothing on Windows: the service control manager learns of
// our state through the service handler instead.
func notify(state string) error { return nil }

// send fails on Windows, which has no AF_UNIX datagrams.
func send(addr, state string) error {
	if addr == "" {
		return nil
	}
	return errors.ErrUnsupported
}
