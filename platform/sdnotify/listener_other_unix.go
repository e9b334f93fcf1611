//go:build unix && !linux

package sdnotify

import (
	"net"

	"golang.org/x/sys/unix"
)

// listen opens the socket (see listenIn): only the supervisor's user can
// reach it, since the OS does not report who sent a datagram.
func listen(dir string) (*Listener, error) { return listenIn(dir) }

func (l *Listener) receive(buf []byte) (Datagram, error) {
	n, _, flags, _, err := l.conn.ReadMsgUnix(buf, nil)
	if err != nil {
		return Datagram{}, err
	}
	return Datagram{N: n, Truncated: flags&unix.MSG_TRUNC != 0}, nil
}

// receiver is a listener's socket: a receive keeps nothing else between
// datagrams.
type receiver struct{ conn *net.UnixConn }
