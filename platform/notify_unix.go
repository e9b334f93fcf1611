//go:build unix

package platform

import (
	"fmt"
	"net"
	"os"
)

// Notify sends state (e.g. "READY=1") to the service manager that started
// us, when it asked for notifications through NOTIFY_SOCKET (systemd's
// Type=notify). It does nothing without one. The protocol is one datagram
// on a unix socket, small enough to write here rather than import a
// library for.
func Notify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify %s: %w", os.Getenv("NOTIFY_SOCKET"), err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify %s: %w", os.Getenv("NOTIFY_SOCKET"), err)
	}
	return nil
}
