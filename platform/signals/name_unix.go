//go:build unix

package signals

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// name returns the conventional name of sig ("SIGKILL"), which
// operators search for, rather than its description ("killed").
func name(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
