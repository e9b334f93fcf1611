package alarm

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysAlarm is a timerfd in the runtime's poller, not a runtime timer. While
// any runtime timer is pending, the runtime's sysmon thread wakes at its
// due time even when nothing else runs; a timerfd wakes only the thread
// that waits for it, and only when it fires. Moving it is one raw syscall
// (see setTimer), with no wake-up of another thread, which is what lets
// each keep-alive move it (see Extend).
type sysAlarm struct {
	f   *os.File
	raw syscall.RawConn
	// set is a.settime, bound once: a closure made per move would be
	// allocated on every keep-alive. mu holds spec from its store to
	// the syscall that reads it, since the keep-alive reader, the
	// deadline's waiter and the supervisor's loop all move the alarm.
	set  func(fd uintptr)
	mu   sync.Mutex
	spec unix.ItimerSpec
}

// newSys returns a stopped alarm.
func newSys() (*sysAlarm, error) {
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
	a := &sysAlarm{f: f, raw: raw}
	a.set = a.settime
	return a, nil
}

// reset makes the alarm fire d from now; at once when d <= 0.
func (a *sysAlarm) reset(d time.Duration) { a.setTimer(max(d, 1)) }

// extend moves the alarm to d from now, as Reset does. It is meant for
// the gateway's keep-alives, twice per deadline for its whole life: each
// moves the alarm, so a healthy gateway never lets it fire.
func (a *sysAlarm) extend(d time.Duration) { a.setTimer(max(d, 1)) }

// stop disarms the alarm.
func (a *sysAlarm) stop() { a.setTimer(0) }

// setTimer is timerfd_settime(2) through RawSyscall: it never blocks, and
// a raw syscall skips the runtime's syscall entry, which wakes sysmon from
// its deep sleep. Zero disarms. A closed alarm is left alone.
func (a *sysAlarm) setTimer(d time.Duration) {
	a.mu.Lock()
	a.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = a.raw.Control(a.set)
	a.mu.Unlock()
}

func (a *sysAlarm) settime(fd uintptr) {
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&a.spec)), 0, 0, 0)
}

// wait blocks until the alarm fires, or fails once it is closed.
func (a *sysAlarm) wait() error {
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

// close stops the alarm and ends a Wait.
func (a *sysAlarm) close() error { return a.f.Close() }
