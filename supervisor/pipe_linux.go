package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// outputPipe makes one of a gateway's output pipes: the read end ours, in
// Go's poller; the write end the gateway's, left blocking, as a program's
// standard output is. os.Pipe puts both ends in the poller, and exec then
// makes the write end blocking again just before the fork: four fcntl
// calls on every restart's path, and two epoll_ctl after it.
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, &os.SyscallError{Syscall: "pipe2", Err: err}
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, &os.SyscallError{Syscall: "fcntl", Err: err}
	}
	// NewFile puts a non-blocking descriptor in the poller, and leaves a
	// blocking one out of it.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
