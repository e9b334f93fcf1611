package sdnotify

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
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
	err = l.initReceiver()
	if err == nil {
		var serr error
		err = l.raw.Control(func(fd uintptr) {
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

// receiver is a Linux listener's socket and what it keeps from one
// datagram to the next, so that a keep-alive, which Hermes sends twice per
// watchdog deadline for the gateway's whole life, allocates nothing: the
// raw conn, the control buffer and the function the poller calls are made
// once, at listen.
type receiver struct {
	conn *net.UnixConn
	raw  syscall.RawConn
	read func(fd uintptr) bool // l.readOne, bound once
	buf  []byte                // the caller's, during one receive
	// oob holds one SCM_CREDENTIALS message and no more: a datagram's
	// SCM_RIGHTS would find no room, so the kernel closes the files it
	// carries instead of opening them in the supervisor.
	oob []byte
	// The last recvmsg's results.
	n, oobn, flags int
	errno          unix.Errno
}

func (l *Listener) initReceiver() error {
	raw, err := l.conn.SyscallConn()
	if err != nil {
		return err
	}
	l.raw, l.read = raw, l.readOne
	l.oob = make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	return nil
}

// receive reads one datagram with a raw, non-blocking recvmsg inside the
// poller's wait (RawConn.Read) rather than through net's ReadMsgUnix. The
// socket is non-blocking, so the call cannot block; a raw syscall skips
// the runtime's syscall entry, which wakes the sysmon thread from its deep
// sleep. Hermes pings twice per watchdog deadline for the gateway's whole
// life, and each such wake-up costs sysmon several thread switches: most
// of the supervisor's idle CPU with the watchdog on (docs/benchmarks.md §6).
func (l *Listener) receive(buf []byte) (Datagram, error) {
	l.buf = buf
	err := l.raw.Read(l.read)
	l.buf = nil
	if err == nil && l.errno != 0 {
		err = l.errno
	}
	if err != nil {
		return Datagram{}, fmt.Errorf("receive sd_notify datagram: %w", err)
	}
	d := Datagram{N: l.n, Truncated: l.flags&unix.MSG_TRUNC != 0}
	d.PID = senderPID(l.oob[:l.oobn])
	d.Unseen = d.PID <= 0
	return d, nil
}

// readOne is the poller's read function: one recvmsg, and whether it is
// done (anything but "nothing yet").
func (l *Listener) readOne(fd uintptr) bool {
	l.n, l.oobn, l.flags, l.errno = recvmsgRaw(fd, l.buf, l.oob)
	return l.errno != unix.EAGAIN && l.errno != unix.EINTR
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
// outside our PID namespace. It reads the pid in place rather than
// through ParseSocketControlMessage, which allocates per message.
func senderPID(oob []byte) int {
	pid := 0
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_CREDENTIALS && len(data) >= unix.SizeofUcred {
			// struct ucred { pid_t pid; uid_t uid; gid_t gid; }
			pid = int(int32(binary.NativeEndian.Uint32(data)))
		}
		oob = rest
	}
	return pid
}
