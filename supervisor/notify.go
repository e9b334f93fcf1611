package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform/alarm"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"
)

// maxNotify bounds one sd_notify datagram. Hermes' longest is under 100
// bytes; systemd's own limit is far larger, but nothing we honour needs it.
const maxNotify = 4096

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

// notifyMsg is one sd_notify datagram, reduced to the fields we honour.
// Unknown fields are dropped, as systemd drops them.
type notifyMsg struct {
	ready, stopping bool
	ping, trigger   bool // WATCHDOG=1, WATCHDOG=trigger
	status          *string
	interval        *time.Duration // WATCHDOG_USEC=
	extend          *time.Duration // EXTEND_TIMEOUT_USEC=
}

// parseNotify reads newline-separated KEY=VALUE assignments. A message
// that is not text, or has a line without "=", or a number that is not
// one, is malformed as a whole: a sender that garbles one field may have
// garbled the rest.
func parseNotify(b []byte) (notifyMsg, error) {
	var m notifyMsg
	if len(b) > maxNotify {
		return m, fmt.Errorf("%d bytes, more than %d", len(b), maxNotify)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return m, errors.New("not text")
	}
	// Bytes, not a string of them: a keep-alive, twice per watchdog
	// deadline for the gateway's whole life, is read without allocating.
	for len(b) > 0 {
		line, rest, _ := cutByte(b, '\n')
		b = rest
		if len(line) == 0 {
			continue
		}
		k, v, ok := cutByte(line, '=')
		if !ok || len(k) == 0 {
			return m, fmt.Errorf("line %q is not KEY=VALUE", truncate(string(line), 40))
		}
		switch string(k) {
		case "READY":
			m.ready = string(v) == "1"
		case "STOPPING":
			m.stopping = string(v) == "1"
		case "STATUS":
			m.status = new(string(v))
		case "WATCHDOG":
			switch string(v) {
			case "1":
				m.ping = true
			case "trigger":
				m.trigger = true
			}
		case "WATCHDOG_USEC":
			us, err := strconv.ParseUint(string(v), 10, 63)
			if err != nil || us > uint64(maxDuration/time.Microsecond) {
				return m, fmt.Errorf("%s=%q is not a number of microseconds", k, truncate(string(v), 24))
			}
			d := time.Duration(us) * time.Microsecond
			m.interval = &d
		case "EXTEND_TIMEOUT_USEC":
			// Any uint64, as systemd reads it; what no Duration holds
			// (past 292 years) saturates, and the stop's ceiling applies.
			us, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return m, fmt.Errorf("%s=%q is not a number of microseconds", k, truncate(string(v), 24))
			}
			d := maxDuration
			if us <= uint64(maxDuration/time.Microsecond) {
				d = time.Duration(us) * time.Microsecond
			}
			m.extend = &d
		}
	}
	return m, nil
}

// cutByte is bytes.Cut for a one-byte separator.
func cutByte(b []byte, sep byte) (before, after []byte, found bool) {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return b[:i], b[i+1:], true
	}
	return b, nil, false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// notifyEvent is a well-formed datagram from the gateway's tree.
type notifyEvent struct {
	run runner
	msg notifyMsg
}

// notifyRejected is a datagram from a process outside the gateway's tree,
// or from one the kernel would not name (unseen: outside our PID
// namespace), which cannot be shown to be in it.
type notifyRejected struct {
	run    runner
	pid    int
	unseen bool
}

func (notifyEvent) isEvent()    {}
func (notifyRejected) isEvent() {}

// keepAlives is shared by one start's reader, its alarm's waiter and the
// Run goroutine. Once the watchdog is armed, a bare WATCHDOG=1 (twice per
// deadline, for the gateway's whole life) is recorded here rather than
// sent as an event: the deadline is a alarm.Alarm that the reader
// extends and the waiter re-arms, and only a deadline that passed with no
// keep-alive becomes an event. An idle supervisor then wakes once per
// keep-alive, in one thread (docs/benchmarks.md §6).
//
// A keep-alive is kept as its time since base, a reading of the clock that
// carries the monotonic clock, and compared by that alone. Kept as a wall
// time (UnixNano) it was compared by the wall clock, which NTP or an
// operator may step by hours while the gateway runs (a Raspberry Pi, with
// no clock of its own, steps by the time it was off): stepped forward past
// the deadline, the next re-arm judged a gateway that kept pinging hung and
// killed it; stepped back, a gateway that did hang went unjudged for as long.
type keepAlives struct {
	armed    atomic.Bool
	interval atomic.Int64 // the deadline, as a time.Duration
	since    atomic.Int64 // the last bare WATCHDOG=1 as time since base, plus one; 0 for none
	base     time.Time
}

func newKeepAlives(base time.Time) *keepAlives { return &keepAlives{base: base} }

// record notes a bare keep-alive that came at t.
func (ka *keepAlives) record(t time.Time) {
	ka.since.Store(int64(max(t.Sub(ka.base), 0)) + 1)
}

// lastAt returns the last bare keep-alive, a time that carries base's
// monotonic reading; false before the first.
func (ka *keepAlives) lastAt() (time.Time, bool) {
	n := ka.since.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return ka.base.Add(time.Duration(n - 1)), true
}

// keepAliveMissed reports that the alarm fired with no keep-alive in the
// deadline that the waiter could see: the Run goroutine decides whether
// the gateway hung.
type keepAliveMissed struct{ run runner }

func (keepAliveMissed) isEvent() {}

func (m notifyMsg) bareKeepAlive() bool {
	return m.ping && !m.ready && !m.stopping && !m.trigger && m.status == nil && m.interval == nil && m.extend == nil
}

// send hands ev to the Run goroutine unless stop is closed first.
func send(events chan<- event, stop <-chan struct{}, ev event) bool {
	select {
	case events <- ev:
		return true
	case <-stop:
		return false
	}
}

// readNotify forwards the datagrams of one gateway start to the Run
// goroutine until the listener is closed or stop is. It runs on its own
// goroutine and touches no supervisor state but ka and the alarm.
func readNotify(l *sdnotify.Listener, run runner, root int, events chan<- event, stop <-chan struct{}, ka *keepAlives, alarm *alarm.Alarm, now func() time.Time, log *zap.Logger) {
	buf := make([]byte, maxNotify+1)
	for {
		d, err := l.Receive(buf)
		if err != nil {
			return
		}
		if d.Unseen || (d.PID != 0 && !inTree(d.PID, root)) {
			if !send(events, stop, notifyRejected{run: run, pid: d.PID, unseen: d.Unseen}) {
				return
			}
			continue
		}
		if d.Truncated || d.N > maxNotify {
			log.Debug("ignoring an oversized sd_notify datagram", zap.Int("sender_pid", d.PID), zap.Int("limit", maxNotify))
			continue
		}
		m, err := parseNotify(buf[:d.N])
		if err != nil {
			log.Debug("ignoring a malformed sd_notify datagram", zap.Int("sender_pid", d.PID), zap.Error(err))
			continue
		}
		if m.bareKeepAlive() && ka.armed.Load() {
			ka.record(now())
			alarm.Extend(time.Duration(ka.interval.Load()))
			continue
		}
		if !send(events, stop, notifyEvent{run: run, msg: m}) {
			return
		}
	}
}

// waitDeadline waits for the keep-alive alarm of one gateway start until
// it is closed. A fire that keep-alives the waiter can see have overtaken
// (where Extend does not move the alarm) re-arms it to the last keep-alive
// plus the deadline; any other fire goes to the Run goroutine, which also
// knows the keep-alives that came as events, and decides.
func waitDeadline(alarm *alarm.Alarm, run runner, events chan<- event, stop <-chan struct{}, ka *keepAlives, now func() time.Time) {
	for alarm.Wait() == nil {
		if last, ok := ka.lastAt(); ok && ka.armed.Load() {
			if left := last.Add(time.Duration(ka.interval.Load())).Sub(now()); left > 0 {
				alarm.Reset(left)
				continue
			}
		}
		if !send(events, stop, keepAliveMissed{run: run}) {
			return
		}
	}
}

// inTree reports whether pid is the gateway (root) or in the process group
// and session it leads: every helper the gateway starts stays in both, and
// no process outside its session can join them.
func inTree(pid, root int) bool {
	return pid == root || proctree.InLeadersGroup(pid, root)
}
