package journald

import (
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logqueue"
)

// entry is one log entry as journald gets it, and as the fallback gets it
// when journald refuses it.
type entry struct {
	msg, text string // MESSAGE, escaped; the same unescaped, for the fallback
	level     zapcore.Level
	at        time.Time
	vars      map[string]string
}

// size is what e holds in memory, near enough for the queue's bound: its
// strings, and a map entry's own cost for each field.
func (e entry) size() int {
	n := len(e.msg) + len(e.text) + 64
	for k, v := range e.vars {
		n += len(k) + len(v) + 48
	}
	return n
}

// sender hands entries to journald from a goroutine of its own, in order
// (logqueue.Queue), so that a journald that takes no datagrams never
// stops the program that logs. An entry journald refuses goes to the
// fallback; one the full queue dropped is counted, and journald gets one
// entry saying how many once it takes entries again.
type sender struct {
	send     func(msg string, priority int, vars map[string]string) error
	fallback zapcore.Core
}

// queue returns the queue of entries s hands to journald.
func (s sender) queue(max int, wait time.Duration) *logqueue.Queue[entry] {
	return logqueue.NewQueue(s.deliver, s.note, entry.size, max, wait)
}

// deliver sends a batch to journald, each refused entry to the fallback.
func (s sender) deliver(batch []entry) (lost, lostBytes int) {
	for _, e := range batch {
		if err := s.send(e.msg, journalPriority(e.level), e.vars); err != nil {
			_ = s.fallback.Write(zapcore.Entry{Level: e.level, Time: e.at, Message: e.text}, nil)
		}
	}
	return 0, 0
}

// note says that lines entries of size bytes were dropped.
func (s sender) note(lines, size int) bool {
	msg := fmt.Sprintf("lost %d log lines, %d bytes: journald took no entries", lines, size)
	s.deliver([]entry{{msg: msg, text: msg, level: zapcore.WarnLevel, at: time.Now(), vars: map[string]string{
		"SYSLOG_IDENTIFIER": "hermes-supervisor", "LINES": strconv.Itoa(lines), "BYTES": strconv.Itoa(size)}}})
	return true
}
