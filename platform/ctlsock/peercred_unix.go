//go:build linux || darwin

package ctlsock

import (
	"fmt"
	"net"
)

// peerUID reads the uid of the process at the other end of a unix socket
// from the kernel (see fdPeerUID): it cannot be forged by the peer.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("peer credentials: %T is not a unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var serr error
	if err := raw.Control(func(fd uintptr) { uid, serr = fdPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	if serr != nil {
		return -1, fmt.Errorf("peer credentials: %w", serr)
	}
	return uid, nil
}
