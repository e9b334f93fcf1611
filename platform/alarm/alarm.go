package alarm

import "time"

// Alarm is a one-shot deadline that one goroutine waits for with Wait
// while others set, move or stop it: the sd_notify keep-alive deadline of
// one gateway start. Wait may return although the deadline was moved
// (a fire raced a Reset): the waiter re-checks what it guards, as it must
// anyway. On Linux it is a timerfd, which wakes no thread but its waiter;
// elsewhere a runtime timer.
type Alarm struct{ s *sysAlarm }

// New returns a stopped alarm.
func New() (*Alarm, error) {
	s, err := newSys()
	if err != nil {
		return nil, err
	}
	return &Alarm{s: s}, nil
}

// Reset makes the alarm fire d from now; at once when d <= 0.
func (a *Alarm) Reset(d time.Duration) { a.s.reset(d) }

// Extend moves the alarm to d from now, as Reset does, where moving it is
// cheap (Linux): it is meant for the gateway's keep-alives, twice per
// deadline for its whole life, so a healthy gateway never lets it fire.
// Elsewhere it does nothing, and the waiter re-arms the alarm when it fires.
func (a *Alarm) Extend(d time.Duration) { a.s.extend(d) }

// Stop disarms the alarm.
func (a *Alarm) Stop() { a.s.stop() }

// Wait blocks until the alarm fires, or fails once it is closed.
func (a *Alarm) Wait() error { return a.s.wait() }

// Close stops the alarm and ends a Wait.
func (a *Alarm) Close() error { return a.s.close() }
