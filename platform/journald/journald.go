package journald

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/logqueue"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"go.uber.org/zap/zapcore"
)

// NewCore returns a zap core that writes each entry to journald over
// its native protocol when stderr is connected to journald (systemd sets
// JOURNAL_STREAM to it): the message as MESSAGE, the level as PRIORITY and
// every field as a journal field of its own (FROM=, TO=, PID=…), which
// `journalctl -u hermes-supervisor TO=failed` can match. It reports false
// elsewhere, and then the caller logs to stderr as usual. An entry
// journald refuses goes to fallback.
func NewCore(enab zapcore.LevelEnabler, fallback zapcore.Core) (zapcore.Core, bool) {
	if !underJournal() {
		return nil, false
	}
	return newCore(enab, journalSend, fallback, queueMax, queueWait), true
}

// A journald that takes no datagrams (wedged, its socket's queue full)
// blocks each send; entries wait for it in a queue of at most queueMax
// bytes, and Sync gives it queueWait to take them.
const (
	queueMax  = 4 << 20
	queueWait = 2 * time.Second
)

func newCore(enab zapcore.LevelEnabler, send func(string, int, map[string]string) error, fallback zapcore.Core, max int, wait time.Duration) *journalCore {
	return &journalCore{LevelEnabler: enab, fallback: fallback, q: sender{send, fallback}.queue(max, wait)}
}

// Connected reports whether stderr is connected to journald, which
// stamps every line with its own time.
func Connected() bool { return underJournal() }

// journalPriority maps zap's levels to syslog's, as journald keeps them.
func journalPriority(l zapcore.Level) int {
	switch {
	case l <= zapcore.DebugLevel:
		return 7
	case l == zapcore.InfoLevel:
		return 6
	case l == zapcore.WarnLevel:
		return 4
	case l == zapcore.ErrorLevel:
		return 3
	}
	return 2
}

type journalCore struct {
	zapcore.LevelEnabler
	fields   []zapcore.Field
	q        *logqueue.Queue[entry] // shared by every core With makes
	fallback zapcore.Core
}

func (c *journalCore) With(fs []zapcore.Field) zapcore.Core {
	clone := *c
	clone.fields = append(slices.Clip(c.fields), fs...)
	clone.fallback = c.fallback.With(fs)
	return &clone
}

func (c *journalCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *journalCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	for k, v := range enc.Fields {
		// As people read them, not as nanoseconds.
		if d, ok := v.(time.Duration); ok {
			enc.Fields[k] = d.String()
		}
	}
	vars := map[string]string{"SYSLOG_IDENTIFIER": "hermes-supervisor"}
	text := e.Message
	if len(enc.Fields) > 0 {
		// The fields also stay in the text, for `journalctl` as most
		// people read it (it shows MESSAGE only).
		// Without HTML escaping: json.Marshal would spell each < > & as
		// six bytes, and base85 output (supervisor's line_base85) is full
		// of them.
		var b strings.Builder
		je := json.NewEncoder(&b)
		je.SetEscapeHTML(false)
		if err := je.Encode(enc.Fields); err == nil {
			text += " " + strings.TrimSuffix(b.String(), "\n")
		}
	}
	// MESSAGE is what `journalctl` prints: one line, escaped as every log
	// line is. A field keeps its raw value: it is data (journald frames a
	// value holding a newline by its length), and its name is ours.
	msg := termtext.Line(text)
	for k, v := range enc.Fields {
		vars[journalField(k)] = journalValue(v)
	}
	if e.Caller.Defined {
		vars["CODE_FILE"], vars["CODE_LINE"] = e.Caller.File, fmt.Sprint(e.Caller.Line)
	}
	// Every value is a string of its own by now: the entry may wait in
	// the queue while the caller reuses what it logged.
	c.q.Put(entry{msg: msg, text: text, level: e.Level, at: e.Time, vars: vars})
	if e.Level > zapcore.ErrorLevel {
		// Fatal and panic end the program: their entry goes first, as
		// zap's own cores sync them.
		return c.Sync()
	}
	return nil
}

// Hold keeps entries queued until Release (see logqueue.Queue.Hold).
func (c *journalCore) Hold() { c.q.Hold() }

// Release sends what Hold kept.
func (c *journalCore) Release() { c.q.Release() }

// Sync waits, at most the queue's wait, for journald to take what was
// logged before it, then syncs the fallback.
func (c *journalCore) Sync() error { return errors.Join(c.q.Sync(), c.fallback.Sync()) }

// reservedFields are journal fields with a meaning of their own: ours of
// the same name get a HERMES_ prefix.
var reservedFields = []string{"MESSAGE", "MESSAGE_ID", "PRIORITY", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
	"ERRNO", "INVOCATION_ID", "USER_INVOCATION_ID", "SYSLOG_FACILITY", "SYSLOG_IDENTIFIER", "SYSLOG_PID",
	"SYSLOG_TIMESTAMP", "SYSLOG_RAW", "DOCUMENTATION", "TID", "UNIT", "USER_UNIT"}

// journalField turns a zap key into a journal field name: upper case
// letters, digits and underscores, not starting with an underscore or a
// digit.
func journalField(k string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, k)
	if name == "" || name[0] == '_' || (name[0] >= '0' && name[0] <= '9') || slices.Contains(reservedFields, name) {
		name = "HERMES_" + strings.TrimLeft(name, "_")
	}
	return name
}

func journalValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}
