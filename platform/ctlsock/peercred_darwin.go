package ctlsock

import (
	"golang.org/x/sys/unix"
)

// fdPeerUID asks the kernel for the peer's uid with LOCAL_PEERCRED, what
// getpeereid uses.
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
