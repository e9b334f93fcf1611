package supervisor

import (
	"context"
	"fmt"

	"github.com/hermes-agent/hermes-supervisor/platform/alarm"
)

// ownPings times the supervisor's own keep-alive to the service manager
// that started us (Config.OwnWatchdog, from our unit's WatchdogSec=) with
// an alarm rather than a runtime timer: a pending runtime timer wakes the
// runtime's sysmon thread at its due time, and sysmon then naps, several
// thread wake-ups per ping; on Linux the alarm is a timerfd in the poller,
// which wakes only the goroutine that waits for it. That goroutine hands
// each fire to the state machine's loop, which sends the ping, so a stuck
// loop stops the pings and gets us restarted.
type ownPings struct {
	alarm *alarm.Alarm
	due   chan struct{} // a ping is due; nil when there is no own watchdog
}

// startOwn arms the first ping's alarm and the goroutine that waits for
// it, until ctx ends; nothing when there is no own watchdog.
func (s *Supervisor) startOwn(ctx context.Context) error {
	if s.cfg.OwnWatchdog <= 0 {
		return nil
	}
	a, err := alarm.New()
	if err != nil {
		return fmt.Errorf("our own keep-alive to the service manager (WATCHDOG_USEC): %w", err)
	}
	s.own = ownPings{alarm: a, due: make(chan struct{})}
	go waitOwn(a, s.own.due, ctx.Done())
	return nil
}

// waitOwn tells the loop of each fire of a, until a is closed or done.
func waitOwn(a *alarm.Alarm, due chan<- struct{}, done <-chan struct{}) {
	for a.Wait() == nil {
		select {
		case due <- struct{}{}:
		case <-done:
			return
		}
	}
}

// feedOwn tells our own service manager we are alive, and arms the next
// ping. It runs from the state machine's loop.
func (s *Supervisor) feedOwn() {
	if s.own.alarm == nil {
		return
	}
	s.notify("WATCHDOG=1")
	s.own.alarm.Reset(s.cfg.OwnWatchdog)
}

// closeOwn stops the pings.
func (s *Supervisor) closeOwn() {
	if s.own.alarm != nil {
		_ = s.own.alarm.Close()
	}
}
