package signals

import (
	"strconv"
	"syscall"
)

// name returns the conventional name of sig; Windows processes are
// never ended by a signal, so this only names the emulated ones.
func name(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return "signal " + strconv.Itoa(int(sig))
}
