//go:build unix

package sdnotify

import (
	"os"
)

// notify sends state (e.g. "READY=1") to the service manager that started
// us, when it asked for notifications through NOTIFY_SOCKET (systemd's
// Type=notify). It does nothing without one. The protocol is one datagram
// on a unix socket, small enough to write here rather than import a
// library for.
func notify(state string) error {
	return send(os.Getenv("NOTIFY_SOCKET"), state)
}

// socketPath is the sun_path of addr: "@name" is an abstract socket,
// whose name starts with a NUL byte.
func socketPath(addr string) string {
	if addr[0] == '@' {
		return "\x00" + addr[1:]
	}
	return addr
}
