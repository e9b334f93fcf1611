//go:build !linux

package alarm

import (
	"errors"
	"os"
	"sync"
	"time"
)

// Alarm is a one-shot deadline that one goroutine waits for with Wait
// while others set, move or stop it: the sd_notify keep-alive deadline of
// one gateway start. Wait may return although the deadline was moved
// (a fire raced a Reset): the waiter re-checks what it guards, as it must
// anyway.
//
// Here it is a runtime timer.
type Alarm struct {
	t      *time.Timer
	fired  chan struct{} // one pending fire
	closed chan struct{}
	once   sync.Once
}

// New returns a stopped alarm.
func New() (*Alarm, error) {
	a := &Alarm{fired: make(chan struct{}, 1), closed: make(chan struct{})}
	a.t = time.AfterFunc(time.Hour, func() {
		select {
		case a.fired <- struct{}{}:
		default:
		}
	})
	a.t.Stop()
	return a, nil
}

// Reset makes the alarm fire d from now; at once when d <= 0.
func (a *Alarm) Reset(d time.Duration) {
	a.t.Stop()
	a.drain()
	a.t.Reset(max(d, 0))
}

// Extend does nothing here: moving a runtime timer on every keep-alive
// wakes another thread of the runtime's scheduler each time, more than the
// one fire per deadline it saves. The waiter re-arms the alarm when it
// fires instead.
func (a *Alarm) Extend(time.Duration) {}

// Stop disarms the alarm.
func (a *Alarm) Stop() {
	a.t.Stop()
	a.drain()
}

func (a *Alarm) drain() {
	select {
	case <-a.fired:
	default:
	}
}

// Wait blocks until the alarm fires, or fails once it is closed.
func (a *Alarm) Wait() error {
	select {
	case <-a.fired:
		return nil
	case <-a.closed:
		return os.ErrClosed
	}
}

// Close stops the alarm and ends a Wait.
func (a *Alarm) Close() error {
	err := errors.New("alarm already closed")
	a.once.Do(func() {
		a.t.Stop()
		close(a.closed)
		err = nil
	})
	return err
}
