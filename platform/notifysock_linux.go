package platform

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// ListenNotify opens an abstract datagram socket that reports each
// sender's credentials (SO_PASSCRED), so that only the gateway's own tree
// is believed. dir is unused on Linux: an abstract name needs no file.
func ListenNotify(dir string) (*NotifyListener, error) {
	name := "@hermes-supervisor/notify/" + randomName()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("open notify socket: %w", err)
	}
	raw, err := conn.SyscallConn()
	if err == nil {
		var serr error
		err = raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		})
		if err == nil {
			err = serr
		}
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("notify socket: ask for sender credentials: %w", err)
	}
	return &NotifyListener{conn: conn, addr: name}, nil
}

func (l *NotifyListener) receive(buf []byte) (Datagram, error) {
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, flags, _, err := l.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return Datagram{}, err
	}
	d := Datagram{N: n, Truncated: flags&unix.MSG_TRUNC != 0}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return d, nil
	}
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			d.PID = int(cred.Pid)
		}
	}
	return d, nil
}

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
