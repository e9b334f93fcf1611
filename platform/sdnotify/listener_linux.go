package sdnotify

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listen opens a datagram socket in a fresh 0700 directory (see
// makeNotifyDir; dir is tried first) that reports each sender's
// credentials (SO_PASSCRED), so that only the gateway's own tree is
// believed. Two guards, because each alone falls short: an abstract name
// is listed in /proc/net/unix to every user of the network namespace,
// which a PID namespace does not hide; a directory stops other users but
// not root, nor our own user in another PID namespace, whose pid the
// kernel reports as 0 and who is then rejected by the credential check.
func listen(dir string) (*Listener, error) {
	l, err := listenIn(dir)
	if err != nil {
		return nil, err
	}
	raw, err := l.conn.SyscallConn()
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
		_ = l.Close()
		return nil, fmt.Errorf("notify socket: ask for sender credentials: %w", err)
	}
	return l, nil
}

// receive reads one datagram with a raw, non-blocking recvmsg inside the
// poller's wait (RawConn.Read) rather than through net's ReadMsgUnix. The
// socket is non-blocking, so the call cannot block; a raw syscall skips
// the runtime's syscall entry, which wakes the sysmon thread from its deep
// sleep. Hermes pings twice per watchdog deadline for the gateway's whole
// life, and each such wake-up costs sysmon several thread switches: most
// of the supervisor's idle CPU with the watchdog on (docs/benchmarks.md §6).
func (l *Listener) receive(buf []byte) (Datagram, error) {
	raw, err := l.conn.SyscallConn()
	if err != nil {
		return Datagram{}, fmt.Errorf("receive sd_notify datagram: %w", err)
	}
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	var (
		n, oobn int
		flags   int
		errno   unix.Errno
	)
	err = raw.Read(func(fd uintptr) bool {
		n, oobn, flags, errno = recvmsgRaw(fd, buf, oob)
		return errno != unix.EAGAIN && errno != unix.EINTR
	})
	if err == nil && errno != 0 {
		err = fmt.Errorf("receive sd_notify datagram: %w", errno)
	}
	if err != nil {
		return Datagram{}, err
	}
	d := Datagram{N: n, Truncated: flags&unix.MSG_TRUNC != 0}
	d.PID = senderPID(oob[:oobn])
	d.Unseen = d.PID <= 0
	return d, nil
}

// recvmsgRaw is recvmsg(2) with MSG_DONTWAIT through RawSyscall: see
// receive for why. Only the sender's credentials are asked for in oob.
func recvmsgRaw(fd uintptr, buf, oob []byte) (n, oobn, flags int, errno unix.Errno) {
	var iov unix.Iovec
	if len(buf) > 0 {
		iov.Base = &buf[0]
		iov.SetLen(len(buf))
	}
	var msg unix.Msghdr
	msg.Iov, msg.Iovlen = &iov, 1
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if e != 0 {
		return 0, 0, 0, e
	}
	return int(r), int(msg.Controllen), int(msg.Flags), 0
}

// senderPID reads SCM_CREDENTIALS from a datagram's control data; 0 when
// there are none, and 0 is also what the kernel reports for a sender
// outside our PID namespace.
func senderPID(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	pid := 0
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			pid = int(cred.Pid)
		}
	}
	return pid
}
