//go:build unix

package sdnotify

import (
	"fmt"
	"net"
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

// send sends state as one sd_notify datagram to addr ("@name" is an
// abstract socket); an empty addr sends nothing.
func send(addr, state string) error {
	if addr == "" {
		return nil
	}
	path := addr
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify %s: %w", addr, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify %s: %w", addr, err)
	}
	return nil
}
