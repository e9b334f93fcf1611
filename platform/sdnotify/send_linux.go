package sdnotify

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// send sends state as one sd_notify datagram to addr ("@name" is an
// abstract socket); an empty addr sends nothing. It is a socket, a sendto
// and a close, each a raw syscall, never the net package's: a syscall
// through the runtime's entry wakes the sysmon thread from its deep
// sleep, and sysmon then naps in 20 µs steps for a while, some dozen
// thread wake-ups per message. A keep-alive goes out twice per watchdog
// deadline for a whole life: ours to systemd from the state machine's
// loop, and the demo gateway's to us, whose naps took turns on a CPU
// with the supervisor's reading thread. None of the three calls blocks:
// the socket is non-blocking, so a receiver whose queue is full makes
// send fail at once (EAGAIN) rather than stall the loop behind it.
func send(addr, state string) error {
	if addr == "" {
		return nil
	}
	var sa unix.RawSockaddrUnix
	path := socketPath(addr)
	if len(path) >= len(sa.Path) {
		return fmt.Errorf("notify %s: %w", addr, unix.ENAMETOOLONG)
	}
	sa.Family = unix.AF_UNIX
	for i := range len(path) {
		sa.Path[i] = int8(path[i])
	}
	// The address's length: an abstract name is exactly its bytes; a
	// path is the kernel's to end at its NUL.
	salen := unsafe.Offsetof(sa.Path) + uintptr(len(path))
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if errno != 0 {
		return fmt.Errorf("notify %s: socket: %w", addr, errno)
	}
	var p unsafe.Pointer
	if len(state) > 0 {
		p = unsafe.Pointer(unsafe.StringData(state))
	}
	_, _, errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(p), uintptr(len(state)), unix.MSG_NOSIGNAL, uintptr(unsafe.Pointer(&sa)), salen)
	unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
	if errno != 0 {
		return fmt.Errorf("notify %s: %w", addr, errno)
	}
	return nil
}
