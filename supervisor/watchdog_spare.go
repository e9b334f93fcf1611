package supervisor

import (
	"errors"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform/alarm"
	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"
)

// A start's notify socket and keep-alive alarm are made while the gateway
// before it runs, off the restart's path, and a watch's are closed once
// it ended, off the exit's.

// open prepares the notify socket of the next start and returns what the
// gateway's environment gains from it.
func (w *watchdog) open() []string {
	w.watch = watch{interval: w.keepAliveDeadline(), ka: newKeepAlives(w.clock.Now())}
	w.ka.interval.Store(int64(w.watch.interval))
	l, alarm, err := w.takeSpare()
	if err != nil {
		lvl := w.log.Warn
		if errors.Is(err, errors.ErrUnsupported) {
			lvl = w.log.Debug
		}
		lvl("no sd_notify socket for the gateway; readiness comes from its files", zap.Error(err))
		return nil
	}
	w.sock, w.alarm, w.stop = l, alarm, make(chan struct{})
	env := []string{"NOTIFY_SOCKET=" + l.Addr()}
	if w.watch.interval > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(w.watch.interval.Microseconds(), 10))
	}
	return env
}

// takeSpare returns a fresh socket in a fresh 0700 directory, whose path
// no earlier gateway was told, emptied of anything sent to it before now,
// and the alarm prepare made (or a new one).
func (w *watchdog) takeSpare() (*sdnotify.Listener, *alarm.Alarm, error) {
	l := w.spareSock
	w.spareSock = nil
	if l != nil {
		n, err := l.Discard()
		if n > 0 {
			w.log.Warn("dropped datagrams sent to the next gateway's notify socket before it was started",
				zap.Int("dropped", n), zap.String("socket", l.Addr()))
		}
		if err != nil {
			_ = l.Close()
			l = nil
		}
	}
	if l == nil {
		var err error
		if l, err = sdnotify.Listen(""); err != nil {
			return nil, nil, err
		}
	}
	if a := w.spareAlarm; a != nil {
		w.spareAlarm = nil
		return l, a, nil
	}
	a, err := alarm.New()
	if err != nil {
		_ = l.Close()
		return nil, nil, fmt.Errorf("no alarm for its keep-alive deadline: %w", err)
	}
	return l, a, nil
}

// prepare makes the next start's alarm and notify socket now, while a
// gateway runs, off the restart's path. A failure is left for open to
// meet and log.
func (w *watchdog) prepare() {
	if w.spareAlarm == nil {
		if a, err := alarm.New(); err == nil {
			w.spareAlarm = a
		}
	}
	if w.spareSock == nil {
		if l, err := sdnotify.Listen(""); err == nil {
			w.spareSock = l
		}
	}
}

// dropSpare closes what prepare made and what ended watches left; the
// supervisor is done.
func (w *watchdog) dropSpare() {
	w.dropRetired()
	if w.spareSock != nil {
		_ = w.spareSock.Close()
		w.spareSock = nil
	}
	if w.spareAlarm != nil {
		_ = w.spareAlarm.Close()
		w.spareAlarm = nil
	}
}

// retiredWatch is the socket and alarm of a watch that ended.
type retiredWatch struct {
	sock  *sdnotify.Listener
	alarm *alarm.Alarm
}

// dropRetired closes the sockets and alarms of the watches that ended.
func (w *watchdog) dropRetired() {
	for _, r := range w.retired {
		_ = r.sock.Close()
		_ = r.alarm.Close()
	}
	w.retired = nil
}
