package supervisor

import (
	"fmt"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/alarm"
	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// ReasonWatchdog is the exit reason of a gateway taken down because it hung.
const ReasonWatchdog = "watchdog timeout"

// WatchdogOff, as Config.Watchdog, turns hang detection through sd_notify
// off whatever Hermes' config says.
const WatchdogOff time.Duration = -1

const (
	// hangKillGrace is what a hung gateway gets between SIGUSR2 plus
	// SIGTERM and the kill of its tree: time for faulthandler to write the
	// stacks, which it does from a C signal handler, not for a drain that
	// a stuck event loop cannot run.
	hangKillGrace = 500 * time.Millisecond
	// pidOnlyGrace is how long gateway.pid must name our child, with no
	// gateway_state.json naming it, before the pid file alone counts as
	// readiness: Hermes writes the pid file before its adapters are up,
	// and the state file a moment later.
	pidOnlyGrace = 2 * time.Second
	// maxHeartbeatPoll bounds the interval between reads of Hermes'
	// heartbeat file under --hang-after.
	maxHeartbeatPoll = 10 * time.Second
)

// WatchdogStatus is what the supervisor knows of a gateway's liveness.
type WatchdogStatus struct {
	// Interval is the sd_notify keep-alive deadline; zero when off.
	Interval Duration `json:"interval,omitempty"`
	// Armed is set once the gateway sent READY=1 or WATCHDOG=1: a gateway
	// that never speaks the protocol is never killed by it.
	Armed         bool       `json:"armed"`
	LastKeepAlive *time.Time `json:"last_keep_alive,omitempty"`
	// HangAfter is the heartbeat-file deadline of --hang-after.
	HangAfter Duration `json:"hang_after,omitempty"`
	// HeartbeatSeen is set once Hermes' heartbeat file named the gateway.
	HeartbeatSeen bool `json:"heartbeat_seen,omitempty"`
	// ExitBy is set once the gateway said STOPPING=1 on its own: it is
	// taken down as hung if it still runs then.
	ExitBy *time.Time `json:"exit_by,omitempty"`
}

// watchdog judges one gateway start's liveness through sd_notify and
// Hermes' heartbeat file, and its readiness through Hermes' files. It is a
// value of the Run goroutine: its methods change only the watchdog and
// return what the loop must do (watchAction); the loop decides.
type watchdog struct {
	log       *zap.Logger
	clock     Clock
	home      string
	setting   time.Duration // Config.Watchdog
	hangAfter time.Duration // Config.HangAfter
	warned    string        // the last config warning, not repeated
	config    hermesConfigCache
	// stopTimeout and maxExtension (Config.StopTimeout and
	// MaxStopExtension) bound a gateway that says STOPPING=1 on its own.
	stopTimeout, maxExtension time.Duration
	// spareAlarm and spareSock are the next start's alarm and notify
	// socket, made while a gateway runs (see prepare), so that a restart
	// does not wait for them: binding a socket is a file-system create,
	// slow on a busy disk. The socket is emptied just before the start
	// (see takeSpare): a datagram queued before its gateway existed could
	// come from a sender whose pid the gateway's tree later reuses.
	spareAlarm *alarm.Alarm
	spareSock  *sdnotify.Listener
	retired    []retiredWatch // closed watches' sockets and alarms, to close
	watch
}

// watch is what the watchdog knows of one gateway start.
type watch struct {
	pid      int
	sock     *sdnotify.Listener
	alarm    *alarm.Alarm // the keep-alive deadline; set with sock
	stop     chan struct{}
	ka       *keepAlives
	interval time.Duration
	armed    bool
	last     time.Time
	check    Timer // the next heartbeat read
	hung     bool  // judged hung: the exit's reason is ReasonWatchdog
	quiet    bool  // no more judgement: it hung, or the supervisor stops it
	spoke    bool
	stopping bool // the gateway said STOPPING=1
	status   string
	rejected int
	extendTo time.Time // EXTEND_TIMEOUT_USEC while starting
	pidSeen  time.Time // gateway.pid first named our child
	beat     bool      // the heartbeat file named our child
	// begun is when the watch of this start began; beatAt, beatSince and
	// beatRead are the heartbeat's updated_at as last read, when it was
	// written by the monotonic clock (as near as the reads tell), and
	// when it was last read: see beatAge.
	begun, beatAt, beatSince, beatRead time.Time
	// A gateway that says STOPPING=1 on its own (at saidStop) is taken
	// down if it still runs at exitBy, which EXTEND_TIMEOUT_USEC may move
	// up to exitCeiling: systemd gives such a service TimeoutStopSec, as
	// if it had sent SIGTERM. Zero when we stop it ourselves (quiet).
	saidStop, exitBy, exitCeiling time.Time
}

// watchAction is what the watchdog asks of the loop.
type watchAction struct {
	hung    string         // the gateway hung: why
	ready   string         // the gateway said it is ready: how
	extend  *time.Duration // the gateway asked for more time (EXTEND_TIMEOUT_USEC)
	publish bool           // something a status shows changed
}

// keepAliveDeadline is the keep-alive deadline for the next start: ours when set,
// else Hermes' gateway.systemd_watchdog_seconds.
func (w *watchdog) keepAliveDeadline() time.Duration {
	switch {
	case w.setting > 0:
		return w.setting
	case w.setting < 0:
		return 0
	}
	d, err := w.config.watchdogOf(w.home, w.clock.Now())
	if err != nil {
		if msg := err.Error(); msg != w.warned {
			w.warned = msg
			w.log.Warn("hang detection is off: Hermes' gateway.systemd_watchdog_seconds cannot be read; set `watchdog` in our config or pass --watchdog to choose",
				zap.Error(err))
		}
		return 0
	}
	w.warned = ""
	return d
}

// started begins listening to the gateway just started as pid; what it
// hears reaches the loop through events.
func (w *watchdog) started(r runner, pid int, events chan<- event) {
	w.pid, w.begun = pid, w.clock.Now()
	if w.sock != nil {
		go readNotify(w.sock, r, pid, events, w.stop, w.ka, w.alarm, w.clock.Now, w.log)
		go waitDeadline(w.alarm, r, events, w.stop, w.ka, w.clock.Now)
	}
	if w.watch.interval > 0 || w.hangAfter > 0 {
		w.log.Info("hang detection on",
			zap.Duration("keep_alive_deadline", w.watch.interval), zap.Duration("hang_after", w.hangAfter),
			zap.Bool("notify_socket", w.sock != nil))
	}
	w.rearm()
}

// close ends the watch of a gateway that exited, or never started, and
// marks the exit of a gateway taken down as hung.
func (w *watchdog) close(e *Exit) {
	if w.hung && e != nil {
		e.Reason = ReasonWatchdog
	}
	if w.sock != nil {
		// Its goroutines stop now; closing the socket and removing its
		// directory waits until the next gateway runs (see dropRetired):
		// it is file system work, on the restart's path otherwise.
		close(w.stop)
		w.retired = append(w.retired, retiredWatch{w.sock, w.alarm})
	}
	if w.check != nil {
		w.check.Stop()
	}
	w.watch = watch{}
}

// lastKeepAlive is the later of the keep-alives the Run goroutine saw and
// those the reader recorded.
func (w *watchdog) lastKeepAlive() time.Time {
	last := w.last
	if w.ka != nil {
		if t, ok := w.ka.lastAt(); ok && t.After(last) {
			last = t
		}
	}
	return last
}

// rearm sets the check timer to the next heartbeat read, and the alarm to
// the keep-alive deadline (see keepAlives).
func (w *watchdog) rearm() {
	if w.check != nil {
		w.check.Stop()
		w.check = nil
	}
	w.setDeadline()
	if w.stopping || w.quiet || w.hangAfter <= 0 {
		return
	}
	w.check = w.clock.NewTimer(max(10*time.Millisecond, min(w.hangAfter/4, maxHeartbeatPoll)))
}

// setDeadline sets the alarm to the keep-alive deadline, or stops it, and
// tells the reader and the waiter whether it is on.
func (w *watchdog) setDeadline() {
	if w.alarm == nil {
		return
	}
	on := w.armed && !w.stopping && !w.quiet
	w.ka.interval.Store(int64(w.watch.interval))
	w.ka.armed.Store(on)
	if w.stopping && !w.quiet && !w.exitBy.IsZero() {
		// Keep-alives no longer move it (ka.armed is off): only the exit,
		// or EXTEND_TIMEOUT_USEC, does.
		w.alarm.Reset(w.exitBy.Sub(w.clock.Now()))
		return
	}
	if !on {
		w.alarm.Stop()
		return
	}
	w.alarm.Reset(w.lastKeepAlive().Add(w.watch.interval).Sub(w.clock.Now()))
}

// silence ends hang detection for this start: the supervisor stops it.
func (w *watchdog) silence() {
	w.quiet = true
	w.rearm()
}

// judge marks the gateway hung: its exit is a failure with ReasonWatchdog.
func (w *watchdog) judge() {
	w.hung = true
	w.silence()
}

// missed runs when the keep-alive alarm fired: the gateway hung unless a
// keep-alive raced the deadline, or, once it said STOPPING=1, unless it
// still has time to exit.
func (w *watchdog) missed() watchAction {
	if w.stopping && !w.quiet && !w.exitBy.IsZero() {
		if now := w.clock.Now(); now.Before(w.exitBy) {
			w.setDeadline()
		} else {
			return watchAction{hung: fmt.Sprintf("it said STOPPING=1 and still runs %s later", now.Sub(w.saidStop).Round(time.Millisecond))}
		}
		return watchAction{}
	}
	if !w.armed || w.stopping || w.quiet {
		return watchAction{}
	}
	if w.clock.Now().Sub(w.lastKeepAlive()) >= w.watch.interval {
		return watchAction{hung: fmt.Sprintf("no keep-alive for %s", w.watch.interval)}
	}
	w.setDeadline()
	return watchAction{}
}

// notified takes in a datagram of the gateway's tree.
func (w *watchdog) notified(m notifyMsg) watchAction {
	var a watchAction
	if w.hung {
		return a
	}
	now := w.clock.Now()
	if !w.spoke {
		w.spoke = true
		w.log.Info("the gateway speaks sd_notify", zap.Int("pid", w.pid))
	}
	if m.status != nil && *m.status != w.status {
		w.status = *m.status
		w.log.Info("gateway status", zap.String("status", w.status), zap.Int("pid", w.pid))
		a.publish = true
	}
	if m.interval != nil {
		w.watch.interval, w.armed, w.last = *m.interval, *m.interval > 0, now
		w.log.Info("the gateway set its keep-alive deadline (WATCHDOG_USEC)", zap.Duration("deadline", w.watch.interval))
		w.rearm()
		a.publish = true
	}
	a.extend = m.extend
	if (m.ready || m.ping) && w.watch.interval > 0 && !w.stopping {
		w.last = now
		if !w.armed {
			w.armed = true
			w.log.Info("watchdog armed: the gateway must send WATCHDOG=1 within every deadline", zap.Duration("deadline", w.watch.interval))
			a.publish = true
		}
		w.setDeadline()
	}
	if m.stopping && !w.stopping {
		w.stopping, w.armed = true, false
		fields := []zap.Field{zap.Int("pid", w.pid)}
		if !w.quiet {
			w.saidStop, w.exitBy = now, now.Add(w.stopTimeout)
			w.exitCeiling = w.exitBy.Add(w.maxExtension)
			fields = append(fields, zap.Time("exit_by", w.exitBy), zap.Duration("stop_timeout", w.stopTimeout))
		}
		w.rearm()
		w.log.Info("the gateway says it is stopping (STOPPING=1): it must exit within the stop timeout, or extend it (EXTEND_TIMEOUT_USEC)", fields...)
		a.publish = true
	}
	if m.extend != nil && w.stopping && !w.quiet && !w.exitBy.IsZero() {
		w.extendExit(now, *m.extend)
	}
	if m.trigger && !w.quiet {
		a.hung = "it sent WATCHDOG=trigger"
	}
	if m.ready {
		a.ready = "sd_notify READY=1"
	}
	return a
}

// extendExit honours EXTEND_TIMEOUT_USEC from a gateway that said
// STOPPING=1 on its own, as a stop we asked for does (see extendStop):
// the deadline becomes at least d from now, never past its ceiling.
func (w *watchdog) extendExit(now time.Time, d time.Duration) {
	grant := min(d, max(w.exitCeiling.Sub(now), 0)) // no now.Add(d): d may be 292 years
	until := now.Add(grant)
	if grant < d {
		until = w.exitCeiling
	}
	if until.After(w.exitBy) {
		w.exitBy = until
		w.log.Debug("the gateway extended its stop (EXTEND_TIMEOUT_USEC)", zap.Duration("asked", d), zap.Time("exit_by", until), zap.Time("ceiling", w.exitCeiling))
		w.setDeadline()
	}
}

// maxReadyExtension bounds a starting gateway's extension: a deadline no
// clock arithmetic overflows on; it only delays the judgement "running".
const maxReadyExtension = 24 * time.Hour

// extendReady honours EXTEND_TIMEOUT_USEC while the gateway starts, as
// systemd does: the ready deadline becomes at least d from now.
func (w *watchdog) extendReady(d time.Duration) {
	now := w.clock.Now()
	if until := now.Add(min(d, maxReadyExtension)); until.After(w.extendTo) {
		w.extendTo = until
		w.log.Info("the gateway extended its ready deadline (EXTEND_TIMEOUT_USEC)", zap.Duration("by", d), zap.Time("until", until))
	}
}

// rejected counts a datagram no process of the gateway's tree sent. Only
// the first of a start is logged: a flood must not become a flood of log
// lines; the count is in the status.
func (w *watchdog) rejectedBy(ev notifyRejected) watchAction {
	w.rejected++
	if w.rejected == 1 {
		if ev.unseen {
			w.log.Warn("ignoring an sd_notify datagram from a sender outside our PID namespace: the kernel names no pid for it, " +
				"so it cannot be shown to be in the gateway's tree; further ones this start are only counted (status: notify_ignored)")
		} else {
			w.log.Warn("ignoring an sd_notify datagram from a sender outside the gateway's process tree; "+
				"further ones this start are only counted (status: notify_ignored)", zap.Int("sender_pid", ev.pid))
		}
	}
	// Published at powers of two: a flood must not become a flood of writes.
	return watchAction{publish: w.rejected&(w.rejected-1) == 0}
}

// checked runs when the check timer fires: it reads Hermes' heartbeat.
func (w *watchdog) checked() watchAction {
	w.check = nil
	var a watchAction
	if w.quiet || w.stopping || w.pid == 0 {
		return a
	}
	if w.hangAfter > 0 {
		if hb, err := readHeartbeat(w.home); err == nil && hb.PID == w.pid {
			if !w.beat {
				w.beat = true
				w.log.Info("Hermes' heartbeat names the gateway; hang detection by heartbeat armed",
					zap.String("file", heartbeatPath(w.home)), zap.Duration("hang_after", w.hangAfter))
				a.publish = true
			}
			if age := w.beatAge(w.clock.Now(), hb.UpdatedAt); age >= w.hangAfter {
				a.hung = fmt.Sprintf("heartbeat not updated for %s", age.Round(time.Second))
				return a
			}
		}
	}
	w.rearm()
	return a
}

// beatAge is how long Hermes' heartbeat has not moved, by the monotonic
// clock. Its updated_at is a wall time, and NTP or an operator may step
// the wall clock by hours between Hermes' write and our read (a Raspberry
// Pi, which has no clock of its own, steps at boot by the time it was
// off): measured by the wall clock, a step forward made a gateway that kept
// beating hung, and a step back hid one that hung. So the file's own age
// counts only when updated_at changes, bounded by the time since our last
// read (it was written since), or since the watch began at the first read
// (the gateway it names was not running before); from then on the
// heartbeat ages by our own clock until it changes again.
func (w *watchdog) beatAge(now, updated time.Time) time.Duration {
	if w.beatRead.IsZero() || !updated.Equal(w.beatAt) {
		since := w.begun
		if !w.beatRead.IsZero() {
			since = w.beatRead
		}
		// updated carries no monotonic reading: this Sub is by the wall clock.
		age := min(max(now.Sub(updated), 0), max(now.Sub(since), 0))
		w.beatAt, w.beatSince = updated, now.Add(-age)
	}
	w.beatRead = now
	return now.Sub(w.beatSince)
}

// readyDeadline is when a gateway started at begun counts as running
// without a sign of readiness.
func (w *watchdog) readyDeadline(begun time.Time, timeout time.Duration) time.Time {
	d := begun.Add(timeout)
	if w.extendTo.After(d) {
		return w.extendTo
	}
	return d
}

// judgeReady reads Hermes' own word on readiness: gateway_state.json
// saying running for the gateway pid. Only a gateway that writes no state
// file for itself is judged by its pid file.
func (w *watchdog) judgeReady(l lockstore.Layout, pid int) (bool, string) {
	if st, err := lockstore.ReadState(l.StateFile()); err == nil && st.PID == pid {
		return st.GatewayState == "running", "gateway_state.json says running"
	}
	rec, err := lockstore.ReadRecord(l.PIDFile())
	if err != nil || rec.PID != pid {
		return false, ""
	}
	now := w.clock.Now()
	if w.pidSeen.IsZero() {
		w.pidSeen = now
	}
	return now.Sub(w.pidSeen) >= pidOnlyGrace, "gateway.pid (it writes no gateway_state.json)"
}

// describe adds what the watch knows to a snapshot's child.
func (w *watchdog) describe(c *Child) {
	c.Status, c.NotifyIgnored = w.status, w.rejected
	if w.watch.interval <= 0 && w.hangAfter <= 0 && w.exitBy.IsZero() {
		return
	}
	st := &WatchdogStatus{Interval: Duration(w.watch.interval), Armed: w.armed, HangAfter: Duration(w.hangAfter), HeartbeatSeen: w.beat}
	if !w.exitBy.IsZero() && !w.quiet {
		t := w.exitBy
		st.ExitBy = &t
	}
	if w.armed {
		// Said as the wall clock reads now, however it was stepped since.
		now := w.clock.Now()
		t := now.Add(-now.Sub(w.lastKeepAlive())).Round(0)
		st.LastKeepAlive = &t
	}
	c.Watchdog = st
}
