package platform

import (
	"net"
	"os"
)

// NotifyListener receives the sd_notify datagrams of one gateway: the
// supervisor opens one per start and hands its Addr to the gateway as
// NOTIFY_SOCKET.
type NotifyListener struct {
	conn *net.UnixConn
	addr string
	dir  string // removed on Close; empty for an abstract socket
}

// Datagram is one message read from a NotifyListener.
type Datagram struct {
	// N is how many bytes of the buffer hold the message.
	N int
	// PID is the sender's pid as the kernel reports it, 0 where the OS
	// does not say (macOS): there the socket's directory is the guard.
	PID int
	// Truncated reports a message longer than the buffer.
	Truncated bool
}

// Addr returns the value for NOTIFY_SOCKET; "@name" is an abstract socket.
func (l *NotifyListener) Addr() string { return l.addr }

// Receive blocks for the next datagram, reading it into buf; it fails once
// the listener is closed.
func (l *NotifyListener) Receive(buf []byte) (Datagram, error) { return l.receive(buf) }

// Close stops the listener and removes its directory, if it has one.
func (l *NotifyListener) Close() error {
	err := l.conn.Close()
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
	}
	return err
}
