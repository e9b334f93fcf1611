package alarm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// firedForTest reports a fire nobody has waited for yet, without taking it.
func (a *Alarm) firedForTest() bool {
	ready := false
	_ = a.s.raw.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		ready = err == nil && n == 1
	})
	return ready
}

func TestAlarmExtend(t *testing.T) {
	a := newAlarm(t)
	a.Reset(20 * time.Millisecond)
	// On Linux each keep-alive moves the alarm: the first deadline is gone.
	a.Extend(300 * time.Millisecond)
	if took := waitAlarm(t, a, 10*time.Second); took < 250*time.Millisecond {
		t.Fatalf("fired after %s: Extend did not move the alarm", took)
	}
}

// Each keep-alive moves the alarm, twice per deadline for the gateway's
// whole life: a move allocates nothing.
func TestExtendAllocatesNothing(t *testing.T) {
	a := newAlarm(t)
	if got := testing.AllocsPerRun(100, func() { a.Extend(time.Hour) }); got != 0 {
		t.Fatalf("Extend allocates %v times, want none", got)
	}
}
