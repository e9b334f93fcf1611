package platform

import (
	"errors"
	"os"
)

// Notify does nothing on Windows: the service control manager learns of
// our state through the service handler instead.
func Notify(state string) error { return nil }

// SendNotify fails on Windows, which has no AF_UNIX datagrams.
func SendNotify(addr, state string) error {
	if addr == "" {
		return nil
	}
	return errors.ErrUnsupported
}

// DumpSignal reports false: Windows has no signal that asks Hermes for its
// stacks.
func DumpSignal() (os.Signal, bool) { return nil, false }
