//go:build unix && !linux

package sdnotify

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// listen opens a datagram socket in a fresh 0700 directory (see
// makeNotifyDir; dir is tried first): only the supervisor's user can
// reach it, since the OS does not report who sent a datagram.
func listen(dir string) (*Listener, error) {
	d, path, lock, err := makeNotifyDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	l := &Listener{addr: path, notifyDir: notifyDir{dir: d, lock: lock}}
	l.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		l.notifyDir.remove(l.addr)
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	return l, nil
}

func (l *Listener) receive(buf []byte) (Datagram, error) {
	n, _, flags, _, err := l.conn.ReadMsgUnix(buf, nil)
	if err != nil {
		return Datagram{}, err
	}
	return Datagram{N: n, Truncated: flags&unix.MSG_TRUNC != 0}, nil
}
