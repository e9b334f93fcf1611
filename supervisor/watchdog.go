package supervisor

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/alarm"
	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
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
}

// watchdog is the supervisor's view of one gateway start through
// sd_notify and Hermes' files, plus its own feed to its service manager.
// It belongs to the Run goroutine.
type watchdog struct {
	warned string // the last config warning, not repeated
	own    Timer  // next WATCHDOG=1 to our own service manager

	// Reset at every gateway start.
	sock     *sdnotify.Listener
	alarm    *alarm.Alarm // the keep-alive deadline; set with sock
	stop     chan struct{}
	ka       *keepAlives
	interval time.Duration
	armed    bool
	last     time.Time
	check    Timer // the next heartbeat read
	kill     Timer // kills a hung gateway's tree
	hung     bool
	spoke    bool
	stopping bool
	status   string
	rejected int
	extendTo time.Time // EXTEND_TIMEOUT_USEC while starting
	stopBy   time.Time // when the kill timer of a stop fires
	stopCeil time.Time // the latest stopBy: the stop timeout plus --max-stop-extension
	extended bool      // an extension of this stop was logged
	capped   bool      // an extension cut to the ceiling was logged
	pidSeen  time.Time // gateway.pid first named our child
	beat     bool      // the heartbeat file named our child
}

// watchdogInterval is the keep-alive deadline for the next start: ours
// when set, else Hermes' gateway.systemd_watchdog_seconds.
func (s *Supervisor) watchdogInterval() time.Duration {
	switch {
	case s.cfg.Watchdog > 0:
		return s.cfg.Watchdog
	case s.cfg.Watchdog < 0:
		return 0
	}
	d, err := hermesWatchdog(s.cfg.Layout.Home)
	if err != nil {
		if msg := err.Error(); msg != s.wd.warned {
			s.wd.warned = msg
			s.log.Warn("hang detection is off: Hermes' gateway.systemd_watchdog_seconds cannot be read; set `watchdog` in our config or pass --watchdog to choose",
				zap.Error(err))
		}
		return 0
	}
	s.wd.warned = ""
	return d
}

// openWatch prepares the notify socket of the next start and returns what
// the gateway's environment gains from it.
func (s *Supervisor) openWatch() []string {
	s.wd = watchdog{warned: s.wd.warned, own: s.wd.own, interval: s.watchdogInterval(), ka: &keepAlives{}}
	s.wd.ka.interval.Store(int64(s.wd.interval))
	l, err := sdnotify.Listen("")
	if err != nil {
		lvl := s.log.Warn
		if errors.Is(err, errors.ErrUnsupported) {
			lvl = s.log.Debug
		}
		lvl("no sd_notify socket for the gateway; readiness comes from its files", zap.Error(err))
		return nil
	}
	alarm, err := alarm.New()
	if err != nil {
		_ = l.Close()
		s.log.Warn("no sd_notify socket for the gateway (no alarm for its keep-alive deadline); readiness comes from its files", zap.Error(err))
		return nil
	}
	s.wd.sock, s.wd.alarm, s.wd.stop = l, alarm, make(chan struct{})
	env := []string{"NOTIFY_SOCKET=" + l.Addr()}
	if s.wd.interval > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(s.wd.interval.Microseconds(), 10))
	}
	return env
}

// watchStarted begins listening to the gateway just started as pid.
func (s *Supervisor) watchStarted(r runner, pid int) {
	if s.wd.sock != nil {
		go readNotify(s.wd.sock, r, pid, s.events, s.wd.stop, s.wd.ka, s.wd.alarm, s.clock.Now, s.log)
		go waitDeadline(s.wd.alarm, r, s.events, s.wd.stop, s.wd.ka, s.clock.Now)
	}
	if s.wd.interval > 0 || s.cfg.HangAfter > 0 {
		s.log.Info("hang detection on",
			zap.Duration("keep_alive_deadline", s.wd.interval), zap.Duration("hang_after", s.cfg.HangAfter),
			zap.Bool("notify_socket", s.wd.sock != nil))
	}
	s.rearm()
}

// closeWatch ends the watch of a gateway that exited, or never started,
// and marks the exit of a gateway taken down as hung.
func (s *Supervisor) closeWatch(e *Exit) {
	if s.wd.hung && e != nil {
		e.Reason = ReasonWatchdog
	}
	if s.wd.sock != nil {
		close(s.wd.stop)
		_ = s.wd.sock.Close()
		_ = s.wd.alarm.Close()
	}
	s.stopTimer(&s.wd.check)
	s.stopTimer(&s.wd.kill)
	s.wd = watchdog{warned: s.wd.warned, own: s.wd.own}
}

// lastKeepAlive is the later of the keep-alives the Run goroutine saw and
// those the reader recorded.
func (s *Supervisor) lastKeepAlive() time.Time {
	last := s.wd.last
	if s.wd.ka != nil {
		if n := s.wd.ka.last.Load(); n != 0 && time.Unix(0, n).After(last) {
			last = time.Unix(0, n)
		}
	}
	return last
}

// rearm sets the check timer to the next heartbeat read, and the alarm to
// the keep-alive deadline (see keepAlives).
func (s *Supervisor) rearm() {
	s.stopTimer(&s.wd.check)
	s.setDeadline()
	if s.wd.stopping || s.wd.hung || s.cfg.HangAfter <= 0 {
		return
	}
	s.wd.check = s.clock.NewTimer(max(10*time.Millisecond, min(s.cfg.HangAfter/4, maxHeartbeatPoll)))
}

// setDeadline sets the alarm to the keep-alive deadline, or stops it, and
// tells the reader and the waiter whether it is on.
func (s *Supervisor) setDeadline() {
	if s.wd.alarm == nil {
		return
	}
	on := s.wd.armed && !s.wd.stopping && !s.wd.hung
	s.wd.ka.interval.Store(int64(s.wd.interval))
	s.wd.ka.armed.Store(on)
	if !on {
		s.wd.alarm.Stop()
		return
	}
	s.wd.alarm.Reset(s.lastKeepAlive().Add(s.wd.interval).Sub(s.clock.Now()))
}

// onMissed runs when the keep-alive alarm fired: the gateway hung unless
// a keep-alive raced the deadline.
func (s *Supervisor) onMissed(ev keepAliveMissed) {
	if ev.run != s.run || s.child == nil || !s.wd.armed || s.wd.stopping || s.wd.hung || s.state == Stopping {
		return
	}
	if s.clock.Now().Sub(s.lastKeepAlive()) >= s.wd.interval {
		s.hangDetected(fmt.Sprintf("no keep-alive for %s", s.wd.interval))
		return
	}
	s.setDeadline()
}

func (s *Supervisor) onNotify(ev notifyEvent) {
	if ev.run != s.run || s.child == nil || s.wd.hung {
		return
	}
	m, now := ev.msg, s.clock.Now()
	if !s.wd.spoke {
		s.wd.spoke = true
		s.log.Info("the gateway speaks sd_notify", zap.Int("pid", s.child.PID))
	}
	changed := false
	if m.status != nil && *m.status != s.wd.status {
		s.wd.status = *m.status
		s.log.Info("gateway status", zap.String("status", s.wd.status), zap.Int("pid", s.child.PID))
		changed = true
	}
	if m.interval != nil {
		s.wd.interval, s.wd.armed, s.wd.last = *m.interval, *m.interval > 0, now
		s.log.Info("the gateway set its keep-alive deadline (WATCHDOG_USEC)", zap.Duration("deadline", s.wd.interval))
		s.rearm()
		changed = true
	}
	if m.extend != nil {
		s.extendDeadline(*m.extend, now)
	}
	if (m.ready || m.ping) && s.wd.interval > 0 && !s.wd.stopping {
		s.wd.last = now
		if !s.wd.armed {
			s.wd.armed = true
			s.log.Info("watchdog armed: the gateway must send WATCHDOG=1 within every deadline", zap.Duration("deadline", s.wd.interval))
			changed = true
		}
		s.setDeadline()
	}
	if m.stopping && !s.wd.stopping {
		s.wd.stopping, s.wd.armed = true, false
		s.rearm()
		s.log.Info("the gateway says it is stopping (STOPPING=1)", zap.Int("pid", s.child.PID))
		changed = true
	}
	if m.trigger && s.state != Stopping {
		s.hangDetected("it sent WATCHDOG=trigger")
		return
	}
	if m.ready && s.state == Starting {
		s.markReady("sd_notify READY=1")
		return
	}
	if changed {
		s.publish()
	}
}

// ownStopGrace is what our own service manager waits beyond our stop
// timeout (platform/service's stopGrace): an extension we pass up keeps
// that margin.
const ownStopGrace = 15 * time.Second

// extendDeadline honours EXTEND_TIMEOUT_USEC as systemd does: the ready or
// stop deadline becomes at least d from now, and the gateway must ask
// again before that passes. A stop's deadline never passes its ceiling,
// the stop timeout plus --max-stop-extension, however large d is.
func (s *Supervisor) extendDeadline(d time.Duration, now time.Time) {
	switch {
	case s.state == Starting:
		if until := now.Add(min(d, maxReadyExtension)); until.After(s.wd.extendTo) {
			s.wd.extendTo = until
			s.log.Info("the gateway extended its ready deadline (EXTEND_TIMEOUT_USEC)", zap.Duration("by", d), zap.Time("until", until))
		}
	case s.state == Stopping && s.timers.kill != nil:
		s.extendStop(d, now)
	}
}

// maxReadyExtension bounds a starting gateway's extension: a deadline no
// clock arithmetic overflows on; it only delays the judgement "running".
const maxReadyExtension = 24 * time.Hour

func (s *Supervisor) extendStop(d time.Duration, now time.Time) {
	grant := min(d, max(s.wd.stopCeil.Sub(now), 0)) // no now.Add(d): d may be 292 years
	until, capped := now.Add(grant), grant < d
	if capped {
		// The ceiling itself: now.Add(ceiling.Sub(now)) can differ from it
		// by the drift between the wall and monotonic clocks.
		until = s.wd.stopCeil
	}
	if !until.After(s.wd.stopBy) {
		if capped && !s.wd.capped {
			s.wd.capped = true
			s.log.Warn("the gateway asked to extend its stop beyond --max-stop-extension; its process tree is killed when the extended deadline passes",
				zap.Duration("asked", d), zap.Time("kill_at", s.wd.stopBy), zap.Duration("max_stop_extension", s.cfg.MaxStopExtension))
		}
		return
	}
	s.stopTimer(&s.timers.kill)
	s.timers.kill, s.wd.stopBy = s.clock.NewTimer(grant), until
	// Our own service manager would kill us, and with us the tree, at its
	// own stop timeout: it hears of the extension too (systemd honours
	// EXTEND_TIMEOUT_USEC from the main process while it stops).
	s.notify("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt((grant+ownStopGrace).Microseconds(), 10))
	fields := []zap.Field{zap.Duration("asked", d), zap.Time("kill_at", until), zap.Time("ceiling", s.wd.stopCeil)}
	switch {
	case capped && !s.wd.capped:
		s.wd.capped, s.wd.extended = true, true
		s.log.Warn("the gateway extended its stop (EXTEND_TIMEOUT_USEC) by more than --max-stop-extension allows: its process tree is killed at the ceiling unless it exits first",
			append(fields, zap.Duration("max_stop_extension", s.cfg.MaxStopExtension))...)
	case !s.wd.extended:
		s.wd.extended = true
		s.log.Info("the gateway extended its stop (EXTEND_TIMEOUT_USEC): its process tree is killed at kill_at unless it exits or extends again, and never after the ceiling",
			fields...)
	default:
		// A draining gateway repeats it every few seconds: once is news.
		s.log.Debug("the gateway extended its stop again (EXTEND_TIMEOUT_USEC)", fields...)
	}
	s.publish()
}

// onRejected counts a datagram no process of the gateway's tree sent. Only
// the first of a start is logged: a flood must not become a flood of log
// lines; the count is in the status.
func (s *Supervisor) onRejected(ev notifyRejected) {
	if ev.run != s.run {
		return
	}
	s.wd.rejected++
	if s.wd.rejected == 1 {
		if ev.unseen {
			s.log.Warn("ignoring an sd_notify datagram from a sender outside our PID namespace: the kernel names no pid for it, " +
				"so it cannot be shown to be in the gateway's tree; further ones this start are only counted (status: notify_ignored)")
		} else {
			s.log.Warn("ignoring an sd_notify datagram from a sender outside the gateway's process tree; "+
				"further ones this start are only counted (status: notify_ignored)", zap.Int("sender_pid", ev.pid))
		}
	}
	// Published at powers of two: a flood must not become a flood of writes.
	if s.wd.rejected&(s.wd.rejected-1) == 0 {
		s.publish()
	}
}

// checkHang runs when the check timer fires.
func (s *Supervisor) checkHang() {
	s.wd.check = nil
	if s.run == nil || s.child == nil || s.state == Stopping || s.wd.hung || s.wd.stopping {
		return
	}
	now := s.clock.Now()
	if s.cfg.HangAfter > 0 {
		if hb, err := readHeartbeat(s.cfg.Layout.Home); err == nil && hb.PID == s.child.PID {
			if !s.wd.beat {
				s.wd.beat = true
				s.log.Info("Hermes' heartbeat names the gateway; hang detection by heartbeat armed",
					zap.String("file", heartbeatPath(s.cfg.Layout.Home)), zap.Duration("hang_after", s.cfg.HangAfter))
				s.publish()
			}
			if age := now.Sub(hb.UpdatedAt); age >= s.cfg.HangAfter {
				s.hangDetected(fmt.Sprintf("heartbeat not updated for %s", age.Round(time.Second)))
				return
			}
		}
	}
	s.rearm()
}

// hangDetected takes a hung gateway down as a stop does, without the
// stop timeout, after asking it for its stacks. Its exit then counts as
// a failure with the reason ReasonWatchdog.
func (s *Supervisor) hangDetected(why string) {
	s.wd.hung = true
	s.rearm()
	s.log.Error("gateway hung: "+why, zap.Int("pid", s.child.PID))
	if sig, ok := signals.Dump(); ok {
		if st, ok := s.run.(*started); ok && st.tree.Signal(sig) == nil {
			s.log.Warn("sent SIGUSR2: Hermes appends every thread's stack to its fault log; look there for where it hung",
				zap.String("file", filepath.Join(s.cfg.Layout.Home, "logs", "gateway_faulthandler.log")))
		}
	}
	s.transition(Stopping, "gateway hung: "+why+"; taking it down")
	if err := s.run.Terminate(); err != nil {
		s.log.Warn("terminate gateway", zap.Error(err))
	}
	s.wd.kill = s.clock.NewTimer(hangKillGrace)
}

func (s *Supervisor) killHung() {
	s.wd.kill = nil
	if s.run == nil {
		return
	}
	s.killTree("killing the hung gateway's process tree")
}

// feedOwn tells our own service manager we are alive. It runs from the
// state machine's loop, so a stuck loop stops the pings and gets us
// restarted.
func (s *Supervisor) feedOwn() {
	s.wd.own = nil
	if s.cfg.OwnWatchdog <= 0 {
		return
	}
	s.notify("WATCHDOG=1")
	s.wd.own = s.clock.NewTimer(s.cfg.OwnWatchdog)
}

// readyDeadline is when a starting gateway counts as running without a
// sign of readiness.
func (s *Supervisor) readyDeadline() time.Time {
	d := s.child.StartedAt.Add(s.cfg.ReadyTimeout)
	if s.wd.extendTo.After(d) {
		return s.wd.extendTo
	}
	return d
}

// judgeReady reads Hermes' own word on readiness: gateway_state.json
// saying running for our child. Only a gateway that writes no state file
// for itself is judged by its pid file.
func (s *Supervisor) judgeReady() (bool, string) {
	l, pid := s.cfg.Layout, s.gatewayID().PID
	if st, err := lockstore.ReadState(l.StateFile()); err == nil && st.PID == pid {
		return st.GatewayState == "running", "gateway_state.json says running"
	}
	rec, err := lockstore.ReadRecord(l.PIDFile())
	if err != nil || rec.PID != pid {
		return false, ""
	}
	now := s.clock.Now()
	if s.wd.pidSeen.IsZero() {
		s.wd.pidSeen = now
	}
	return now.Sub(s.wd.pidSeen) >= pidOnlyGrace, "gateway.pid (it writes no gateway_state.json)"
}

// markReady moves a starting gateway to running; by says how readiness
// was judged, empty when it was not.
func (s *Supervisor) markReady(by string) {
	s.stopTimer(&s.timers.ready)
	s.child.Ready, s.child.ReadyBy = by != "", by
	reason := "gateway is ready: " + by
	if by == "" {
		s.child.ReadyBy = "ready timeout"
		reason = fmt.Sprintf("no sign of readiness after %s; treating the gateway as running", s.readyDeadline().Sub(s.child.StartedAt).Round(time.Millisecond))
	}
	s.transition(Running, reason)
	s.notify("READY=1")
}

// publish persists and reports a change that is not a transition (the
// gateway's STATUS=, the watchdog arming), so that `status` and our own
// service manager see it.
func (s *Supervisor) publish() {
	snap := s.snapshot()
	if err := writeStatusFile(s.cfg.Layout.SupervisorState(), snap); err != nil {
		s.log.Warn("could not write the supervisor state file", zap.Error(err))
	}
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(snap)
	}
}

// describeWatch adds what the watch knows to a snapshot's child.
func (s *Supervisor) describeWatch(c *Child) {
	c.Status, c.NotifyIgnored = s.wd.status, s.wd.rejected
	if s.state == Stopping && s.timers.kill != nil {
		t := s.wd.stopBy
		c.KillAt = &t
	}
	if s.wd.interval <= 0 && s.cfg.HangAfter <= 0 {
		return
	}
	w := &WatchdogStatus{Interval: Duration(s.wd.interval), Armed: s.wd.armed, HangAfter: Duration(s.cfg.HangAfter), HeartbeatSeen: s.wd.beat}
	if s.wd.armed {
		t := s.lastKeepAlive()
		w.LastKeepAlive = &t
	}
	c.Watchdog = w
}
