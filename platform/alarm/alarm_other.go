//go:build !linux

package alarm

import (
	"errors"
	"os"
	"sync"
	"time"
)

// sysAlarm is a runtime timer.
type sysAlarm struct {
	t      *time.Timer
	fired  chan struct{} // one pending fire
	closed chan struct{}
	once   sync.Once
}

// newSys returns a stopped alarm.
func newSys() (*sysAlarm, error) {
	a := &sysAlarm{fired: make(chan struct{}, 1), closed: make(chan struct{})}
	a.t = time.AfterFunc(time.Hour, func() {
		select {
		case a.fired <- struct{}{}:
		default:
		}
	})
	a.t.Stop()
	return a, nil
}

// reset makes the alarm fire d from now; at once when d <= 0.
func (a *sysAlarm) reset(d time.Duration) {
	a.t.Stop()
	a.drain()
	a.t.Reset(max(d, 0))
}

// extend does nothing here: moving a runtime timer on every keep-alive
// wakes another thread of the runtime's scheduler each time, more than the
// one fire per deadline it saves. The waiter re-arms the alarm when it
// fires instead.
func (a *sysAlarm) extend(time.Duration) {}

// stop disarms the alarm.
func (a *sysAlarm) stop() {
	a.t.Stop()
	a.drain()
}

func (a *sysAlarm) drain() {
	select {
	case <-a.fired:
	default:
	}
}

// wait blocks until the alarm fires, or fails once it is closed.
func (a *sysAlarm) wait() error {
	select {
	case <-a.fired:
		return nil
	case <-a.closed:
		return os.ErrClosed
	}
}

// close stops the alarm and ends a Wait.
func (a *sysAlarm) close() error {
	err := errors.New("alarm already closed")
	a.once.Do(func() {
		a.t.Stop()
		close(a.closed)
		err = nil
	})
	return err
}
