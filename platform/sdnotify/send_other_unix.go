//go:build unix && !linux

package sdnotify

import (
	"fmt"
	"net"
)

// send sends state as one sd_notify datagram to addr ("@name" is an
// abstract socket); an empty addr sends nothing.
func send(addr, state string) error {
	if addr == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socketPath(addr), Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify %s: %w", addr, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify %s: %w", addr, err)
	}
	return nil
}
