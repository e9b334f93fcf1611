//go:build unix && !linux

package platform

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ListenNotify opens a datagram socket in a fresh 0700 directory under dir
// (the temporary directory when empty): only the supervisor's user can
// reach it, since the OS does not report who sent a datagram.
func ListenNotify(dir string) (*NotifyListener, error) {
	d, err := os.MkdirTemp(dir, "hsn-")
	if err != nil {
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	if err := os.Chmod(d, 0o700); err != nil {
		os.RemoveAll(d)
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	path := filepath.Join(d, "n")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(d)
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	return &NotifyListener{conn: conn, addr: path, dir: d}, nil
}

func (l *NotifyListener) receive(buf []byte) (Datagram, error) {
	n, _, flags, _, err := l.conn.ReadMsgUnix(buf, nil)
	if err != nil {
		return Datagram{}, err
	}
	return Datagram{N: n, Truncated: flags&unix.MSG_TRUNC != 0}, nil
}
