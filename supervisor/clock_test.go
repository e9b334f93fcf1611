package supervisor

import (
	"sync"
	"time"
)

// testClock is a Clock whose time moves and whose timers fire only when
// the test says so; each timer remembers what it was armed for.
type testClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*testTimer
	made   chan struct{} // nil, or one value per NewTimer
}

type testTimer struct {
	d  time.Duration // what it was armed for
	at time.Time
	c  chan time.Time
}

func (t *testTimer) C() <-chan time.Time { return t.c }
func (t *testTimer) Stop() bool          { return true }

// newTestClock returns a clock that also says, on made, when a timer is
// armed.
func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), made: make(chan struct{}, 100)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &testTimer{d: d, at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	if c.made != nil {
		c.made <- struct{}{}
	}
	return t
}

// advance moves the time on and, if fire, fires the timers that are due.
func (c *testClock) advance(d time.Duration, fire bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	if !fire {
		return
	}
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}
