package journald

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestJournalField(t *testing.T) {
	tests := []struct{ in, want string }{
		{"to", "TO"},
		{"lock_dir", "LOCK_DIR"},
		{"child.ready", "CHILD_READY"},
		{"message", "HERMES_MESSAGE"},
		{"priority", "HERMES_PRIORITY"},
		{"_private", "HERMES_PRIVATE"},
		{"2nd", "HERMES_2ND"},
		{"", "HERMES_"},
	}
	for _, tt := range tests {
		if got := journalField(tt.in); got != tt.want {
			t.Errorf("journalField(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// recordingCore counts what reaches the fallback.
type recordingCore struct {
	zapcore.LevelEnabler
	wrote *[]string
}

func (r recordingCore) With([]zapcore.Field) zapcore.Core { return r }

func (r recordingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, r)
}

func (r recordingCore) Write(e zapcore.Entry, _ []zapcore.Field) error {
	*r.wrote = append(*r.wrote, e.Message)
	return nil
}

func (r recordingCore) Sync() error { return nil }

// TestJournalCoreWrite sends entries through the core with a recording
// send: the message carries the fields, each field is a journal field, the
// level is the priority, and what journald refuses goes to the fallback.
func TestJournalCoreWrite(t *testing.T) {
	type sent struct {
		msg  string
		prio int
		vars map[string]string
	}
	var got []sent
	var fellBack []string
	var refuse atomic.Bool
	core := newCore(zapcore.InfoLevel, func(msg string, prio int, vars map[string]string) error {
		if refuse.Load() {
			return errors.New("refused")
		}
		got = append(got, sent{msg, prio, vars})
		return nil
	}, recordingCore{zapcore.InfoLevel, &fellBack}, 1<<20, time.Minute)
	log := zap.New(core).With(zap.String("home", "/h"))
	log.Info("state", zap.String("from", "starting"), zap.String("to", "running"), zap.Int("pid", 42), zap.Duration("uptime", 1500*time.Millisecond))
	log.Warn("sweep", zap.Strings("argv", []string{"a", "b"}))
	log.Debug("not at info")
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	log.Error("lost")
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}

	if len(got) != 2 {
		t.Fatalf("sent %d entries, want 2: %+v", len(got), got)
	}
	first := got[0]
	if first.prio != 6 || first.vars["TO"] != "running" || first.vars["PID"] != "42" || first.vars["UPTIME"] != "1.5s" || first.vars["HOME"] != "/h" ||
		first.vars["SYSLOG_IDENTIFIER"] != "hermes-supervisor" {
		t.Errorf("first entry: %+v", first)
	}
	if !strings.HasPrefix(first.msg, "state {") || !strings.Contains(first.msg, `"to":"running"`) {
		t.Errorf("first MESSAGE = %q: want the message then its fields", first.msg)
	}
	if got[1].prio != 4 || got[1].vars["ARGV"] != `["a","b"]` {
		t.Errorf("second entry: %+v", got[1])
	}
	if len(fellBack) != 1 || fellBack[0] != `lost {"home":"/h"}` {
		t.Errorf("fallback got %v, want the refused entry with its fields", fellBack)
	}
}

// TestJournalCoreHostile logs a gateway's hostile text as the message's
// fields and as a field's name: MESSAGE (what journalctl prints) stays one
// line with no raw control character, a name cannot become a journal field
// of ours (PRIORITY, MESSAGE), and each value reaches journald unchanged,
// which frames a value holding a newline by its length.
func TestJournalCoreHostile(t *testing.T) {
	var msgs []string
	var fields []map[string]string
	core := newCore(zapcore.InfoLevel, func(msg string, prio int, vars map[string]string) error {
		msgs, fields = append(msgs, msg), append(fields, vars)
		return nil
	}, recordingCore{zapcore.InfoLevel, new([]string)}, 1<<20, time.Minute)
	hostile := "ok\x1b[2J\a\rforged\nPRIORITY=0\nMESSAGE=forged \u009b31m \u2028 \u202e \xff"
	zap.New(core).Info("gateway status", zap.String("status", hostile), zap.String("x\nPRIORITY=0\nMESSAGE", "v"))
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("sent %d entries, want 1", len(msgs))
	}
	for i, r := range msgs[0] {
		if r == '\n' || r == '\r' || (r < ' ' && r != '\t') || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u202e' ||
			(r == '\ufffd' && !strings.HasPrefix(msgs[0][i:], "\ufffd")) {
			t.Errorf("MESSAGE holds raw %U at %d: %q", r, i, msgs[0])
		}
	}
	if !strings.Contains(msgs[0], `ok\u001b[2J\u0007\rforged\nPRIORITY=0`) || !strings.Contains(msgs[0], `\u009b31m \u2028 \u202e`) {
		t.Errorf("MESSAGE does not show the escapes: %q", msgs[0])
	}
	vars := fields[0]
	if vars["STATUS"] != hostile {
		t.Errorf("STATUS = %q, want the raw value %q", vars["STATUS"], hostile)
	}
	if vars["X_PRIORITY_0_MESSAGE"] != "v" {
		t.Errorf("a hostile field name was not made a name of its own: %q", vars)
	}
	for k := range vars {
		if strings.ContainsAny(k, "\n\r=") || k == "PRIORITY" || k == "MESSAGE" {
			t.Errorf("journal field name %q", k)
		}
	}
}
