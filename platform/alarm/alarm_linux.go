package alarm

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Alarm is a one-shot deadline that one goroutine waits for with Wait
// while others set, move or stop it: the sd_notify keep-alive deadline of
// one gateway start. Wait may return although the deadline was moved
// (a fire raced a Reset): the waiter re-checks what it guards, as it must
// anyway.
//
// Here it is a timerfd in the runtime's poller, not a runtime timer. While
// any runtime timer is pending, the runtime's sysmon thread wakes at its
// due time even when nothing else runs; a timerfd wakes only the thread
// that waits for it, and only when it fires. Moving it is one raw syscall
// (see setTimer), with no wake-up of another thread, which is what lets
// each keep-alive move it (see Extend).
type Alarm struct {
	f   *os.File
	raw syscall.RawConn
}

// New returns a stopped alarm.
func New() (*Alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create alarm: timerfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "alarm")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create alarm: %w", err)
	}
	return &Alarm{f: f, raw: raw}, nil
}

// Reset makes the alarm fire d from now; at once when d <= 0.
func (a *Alarm) Reset(d time.Duration) { a.setTimer(max(d, 1)) }

// Extend moves the alarm to d from now, as Reset does. It is meant for
// the gateway's keep-alives, twice per deadline for its whole life: each
// moves the alarm, so a healthy gateway never lets it fire.
func (a *Alarm) Extend(d time.Duration) { a.setTimer(max(d, 1)) }

// Stop disarms the alarm.
func (a *Alarm) Stop() { a.setTimer(0) }

// setTimer is timerfd_settime(2) through RawSyscall: it never blocks, and
// a raw syscall skips the runtime's syscall entry, which wakes sysmon from
// its deep sleep. Zero disarms. A closed alarm is left alone.
func (a *Alarm) setTimer(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = a.raw.Control(func(fd uintptr) {
		_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

// Wait blocks until the alarm fires, or fails once it is closed.
func (a *Alarm) Wait() error {
	var errno syscall.Errno
	err := a.raw.Read(func(fd uintptr) bool {
		var n [8]byte // how many times it fired; one-shot, so 1
		_, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&n[0])), uintptr(len(n)))
		return errno != unix.EAGAIN && errno != unix.EINTR
	})
	if err == nil && errno != 0 {
		err = fmt.Errorf("wait for alarm: %w", errno)
	}
	return err
}

// Close stops the alarm and ends a Wait.
func (a *Alarm) Close() error { return a.f.Close() }
