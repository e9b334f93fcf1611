package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"go.uber.org/zap"
)

// The gateway's output is logged one entry per line, each line in the
// cheapest of three exact forms (see lineField), and at most a burst of
// lines per interval, as journald limits a service.

// DefaultOutputBurst and DefaultOutputInterval are journald's defaults
// (RateLimitBurst=10000, RateLimitIntervalSec=30s): at most that many
// lines of gateway output are logged per interval.
const (
	DefaultOutputBurst    = 10000
	DefaultOutputInterval = 30 * time.Second
)

// maxLogLine bounds one logged line of gateway output.
const maxLogLine = 16 << 10

// gatewayOutput logs the output of one gateway: its streams share the rate
// limit of every gateway of the run, and the last stream to end reports
// what the limit suppressed so far.
type gatewayOutput struct {
	log   *zap.Logger
	limit *outputLimit
	open  atomic.Int32 // streams not yet at EOF
	// last holds the last outputTail bytes of both streams, for the
	// exit's judgement of what Hermes said when it refused to run.
	lastMu sync.Mutex
	last   []byte
}

// outputTail is how much of the gateway's last output an exit keeps:
// Hermes' refusals (the multiplexer's, argparse's) are one or two lines.
const outputTail = 4 << 10

func (o *gatewayOutput) keep(p []byte) {
	o.lastMu.Lock()
	defer o.lastMu.Unlock()
	if len(p) >= outputTail {
		p = p[len(p)-outputTail:]
	}
	if over := len(o.last) + len(p) - outputTail; over > 0 {
		o.last = o.last[over:]
	}
	o.last = append(o.last, p...)
}

// tail returns a copy of the last output kept.
func (o *gatewayOutput) tail() []byte {
	o.lastMu.Lock()
	defer o.lastMu.Unlock()
	return bytes.Clone(o.last)
}

func newGatewayOutput(log *zap.Logger, limit *outputLimit, streams int) *gatewayOutput {
	o := &gatewayOutput{log: log, limit: limit}
	o.open.Store(int32(streams))
	return o
}

// stream returns the logger of one stream ("stdout", "stderr").
func (o *gatewayOutput) stream(name string) *lineLogger {
	return &lineLogger{log: o.log, stream: name, limit: o.limit}
}

// readFrom logs what r yields until EOF (every writer closed it: the
// gateway and whatever it left holding its output), then closes r and
// done; the last stream to end reports what was suppressed first, so that
// the count is logged before the gateway's exit is when the exit's wait
// for the output (outputDrain) sees the end.
func (o *gatewayOutput) readFrom(l *lineLogger, r *os.File, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			o.keep(buf[:n])
			_, _ = l.Write(buf[:n])
		}
		if err != nil {
			l.flush()
			if o.open.Add(-1) == 0 {
				o.limit.flush()
			}
			return
		}
	}
}

// lineLogger turns one stream of the gateway's output into one log entry
// per line.
type lineLogger struct {
	log    *zap.Logger
	stream string
	limit  *outputLimit // nil: no limit
	mu     sync.Mutex
	buf    []byte
	cut    int // bytes of the current line past maxLogLine, dropped
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			break
		}
		l.add(p[:i])
		l.emit(1)
		p = p[i+1:]
	}
	return n, nil
}

// add keeps the first maxLogLine bytes of a line and counts the rest, so
// that the cut is marked rather than silent.
func (l *lineLogger) add(p []byte) {
	room := max(maxLogLine-len(l.buf), 0)
	if len(p) > room {
		l.cut += len(p) - room
		p = p[:room]
	}
	l.buf = append(l.buf, p...)
}

// emit logs the line held, which ended in end bytes of newline (0 for the
// last line before EOF). One carriage return before the newline ends the
// line too (CRLF); any other is part of it.
func (l *lineLogger) emit(end int) {
	if l.limit.admit(len(l.buf) + l.cut + end) {
		line := l.buf
		if l.cut == 0 && end > 0 {
			line = bytes.TrimSuffix(line, []byte{'\r'})
		}
		fields := []zap.Field{zap.String("stream", l.stream), termtext.LineField(line)}
		if l.cut > 0 {
			fields = append(fields, zap.Int("cut_bytes", l.cut))
		}
		l.log.Info("gateway output", fields...)
	}
	l.buf, l.cut = l.buf[:0], 0
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 || l.cut > 0 {
		l.emit(0)
	}
}

// outputLimit is journald's rate limit for one gateway: at most burst
// lines per interval, the first line after an interval has passed opening
// the next. What it drops is counted and reported in one line: when the
// interval ends (by the clock's timer) and when the output ends.
type outputLimit struct {
	log      *zap.Logger
	clock    Clock
	burst    int
	interval time.Duration

	mu      sync.Mutex
	begun   time.Time // the current interval's start; zero before the first line
	logged  int       // lines logged in the current interval
	lines   int       // suppressed and not yet reported
	bytes   int64
	pending bool          // a timer reports at the interval's end
	stop    chan struct{} // closed by close: no timer waits any longer
	closed  bool
}

// newOutputLimit returns the limit, or nil (no limit) when burst or
// interval is not positive, as journald turns it off for either 0.
func newOutputLimit(log *zap.Logger, clock Clock, burst int, interval time.Duration) *outputLimit {
	if burst <= 0 || interval <= 0 {
		return nil
	}
	return &outputLimit{log: log, clock: clock, burst: burst, interval: interval, stop: make(chan struct{})}
}

// admit reports whether a line of size bytes (as the gateway wrote it)
// may be logged, and counts it if not.
func (o *outputLimit) admit(size int) bool {
	if o == nil {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock.Now()
	if o.begun.IsZero() || now.Sub(o.begun) >= o.interval || now.Before(o.begun) {
		o.report()
		o.begun, o.logged = now, 0
	}
	if o.logged < o.burst {
		o.logged++
		return true
	}
	o.lines++
	o.bytes += int64(size)
	if !o.pending && !o.closed {
		o.pending = true
		go o.reportAfter(o.begun.Add(o.interval).Sub(now))
	}
	return false
}

// reportAfter reports what was suppressed once d has passed: a flood that
// stops is counted at the end of its interval, not at the next line.
func (o *outputLimit) reportAfter(d time.Duration) {
	t := o.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-o.stop:
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = false
	o.report()
}

// flush reports what is left: one gateway's output has ended, and the
// limit goes on for the next one.
func (o *outputLimit) flush() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.report()
}

// close reports what is left, and stops the timer waiting to: the run has
// ended.
func (o *outputLimit) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.stop)
	}
	o.report()
}

// report logs what was suppressed since the last report, if anything;
// o.mu is held, so that two reports never count a line twice.
func (o *outputLimit) report() {
	if o.lines == 0 {
		return
	}
	o.log.Warn(fmt.Sprintf("suppressed %d lines, %d bytes of gateway output", o.lines, o.bytes),
		zap.Int("lines", o.lines), zap.Int64("bytes", o.bytes),
		zap.Int("burst", o.burst), zap.Duration("interval", o.interval))
	o.lines, o.bytes = 0, 0
}
