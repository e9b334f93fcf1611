package ctlsock

import (
	"golang.org/x/sys/unix"
)

// fdPeerUID asks the kernel for the peer's uid with SO_PEERCRED.
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
