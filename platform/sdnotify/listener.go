package sdnotify

import (
	"fmt"
	"net"
	"os"
)

// Listener receives the sd_notify datagrams of one gateway: the
// supervisor opens one per start and hands its Addr to the gateway as
// NOTIFY_SOCKET.
type Listener struct {
	conn      *net.UnixConn
	addr      string
	notifyDir // the socket's private directory, where the OS has one
}

// Datagram is one message read from a Listener.
type Datagram struct {
	// N is how many bytes of the buffer hold the message.
	N int
	// PID is the sender's pid as the kernel reports it, 0 where the OS
	// does not say (macOS): there the socket's directory is the guard.
	PID int
	// Unseen reports a sender the kernel would not name: on Linux, one
	// outside our PID namespace (the kernel then reports pid 0), or a
	// datagram without credentials. Such a sender cannot be shown to be
	// in the gateway's tree, so nothing it says may be believed.
	Unseen bool
	// Truncated reports a message longer than the buffer.
	Truncated bool
}

// Addr returns the value for NOTIFY_SOCKET: the path of a socket in a
// directory only our user can enter.
func (l *Listener) Addr() string { return l.addr }

// Receive blocks for the next datagram, reading it into buf; it fails once
// the listener is closed.
func (l *Listener) Receive(buf []byte) (Datagram, error) { return l.receive(buf) }

// Close stops the listener and removes its socket and directory.
func (l *Listener) Close() error {
	err := l.conn.Close()
	l.notifyDir.remove(l.addr)
	return err
}

// Listen opens a datagram socket for one gateway's notifications in a fresh
// 0700 directory (dir is tried first), so that only our user can reach it.
// On Linux the socket also reports each sender's credentials (SO_PASSCRED),
// so that only the gateway's own tree is believed: a directory stops other
// users but not root, nor our own user in another PID namespace, whose pid
// the kernel reports as 0. On Windows, where Go cannot receive AF_UNIX
// datagrams and Hermes sends none, it returns errors.ErrUnsupported and
// readiness comes from gateway_state.json.
func Listen(dir string) (*Listener, error) {
	d, err := MakeDir(dir)
	if err != nil {
		return nil, err
	}
	return d.Listen()
}

// Dir is the fresh private directory of one start's notify socket, made
// ahead of that start: making a directory in a crowded /tmp is the slow
// part of Listen, and an empty directory of ours receives nothing, so it
// can wait while the gateway before runs. Only the socket must not exist
// before its gateway does (see Dir.Listen).
type Dir struct {
	notifyDir
	addr  string
	taken bool
}

// MakeDir makes the directory for a later Dir.Listen, as Listen would
// (dir is tried first); Close removes it if it is never listened in.
func MakeDir(dir string) (*Dir, error) { return makeDir(dir) }

// Listen opens the socket in d; from then on d belongs to the Listener,
// whose Close removes both. A socket bound only now has queued nothing
// from before its gateway was started.
func (d *Dir) Listen() (*Listener, error) {
	if d.taken {
		return nil, fmt.Errorf("notify socket %s: %w", d.addr, os.ErrClosed)
	}
	d.taken = true
	return d.listen()
}

// Close removes the directory, unless a Listener took it.
func (d *Dir) Close() error {
	if !d.taken {
		d.taken = true
		d.notifyDir.remove(d.addr)
	}
	return nil
}
