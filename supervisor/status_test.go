package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// A state file that names a cgroup for its gateway, forged or left by a
// supervisor long dead, is never shown as the gateway's cgroup: only the
// live supervisor knows which cgroup it made.
func TestStateFileCgroupIsNotBelieved(t *testing.T) {
	path := filepath.Join(testdir.New(t), "supervisor.json")
	forged := `{"state":"running","home":"/h","lock_dir":"/l","supervisor":{"pid":99999},
		"child":{"pid":1,"argv":["hermes","gateway","run"],"started_at":"2026-01-01T00:00:00Z","cgroup":"/sys/fs/cgroup"}}`
	if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatusFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Child == nil || st.Child.Cgroup != "" {
		t.Fatalf("child read from the state file: %+v, want it without a cgroup", st.Child)
	}
	var b strings.Builder
	if err := st.WriteText(&b, time.Now()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cgroup:") {
		t.Errorf("status from a state file names a cgroup:\n%s", b.String())
	}
}

// TestWriteTextEscapesEveryString sets every string a status can carry
// (from a forged state file or the gateway's STATUS=) to text that clears
// the screen, returns the cursor, forges a line, overrides bidi and holds
// an invalid byte: the text output holds none of it raw, only its escapes.
func TestWriteTextEscapesEveryString(t *testing.T) {
	hostile := "x\x1b[2J\a\r\nstate:      running\u009b\u2028\u202e\xff"
	now := time.Now()
	st := &Status{State: State(hostile), Reason: hostile, Home: hostile, LockDir: hostile, Source: hostile,
		Child:    &Child{PID: 1, StartedAt: now, ReadyBy: hostile, Status: hostile, Cgroup: hostile, Ready: true},
		LastExit: &Exit{Signal: hostile, Reason: hostile, At: now},
		Locks:    []lockstore.Entry{{Path: hostile, Kind: lockstore.Kind(hostile)}, {Path: hostile, Kind: lockstore.Kind(hostile)}}}
	st.Supervisor.PID = 1
	var b strings.Builder
	if err := st.WriteText(&b, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, r := range out {
		if r == '\n' {
			continue
		}
		if (r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd")) || !strconv.IsGraphic(r) {
			t.Errorf("raw %U at %d in:\n%s", r, i, out)
		}
	}
	escaped := strconv.QuoteToGraphic(hostile)
	for _, label := range []string{"state:      ", "home:       ", "lock dir:   ", "gateway says: ", "cgroup:     ", "locks:      ", "            "} {
		if !strings.Contains(out, "\n"+label+escaped) && !strings.HasPrefix(out, label+escaped) {
			t.Errorf("no line %q followed by the escaped text in:\n%s", label, out)
		}
	}
	if strings.Contains(out, "\nstate:      running") {
		t.Errorf("a forged line made it:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 11 {
		t.Errorf("%d lines, want 11 (one per label):\n%s", n, out)
	}
}
