package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestParseNotify(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		in   string
		want notifyMsg
		bad  bool
	}{
		{name: "hermes ready", in: "READY=1\nSTATUS=Hermes Gateway running", want: notifyMsg{ready: true, status: s("Hermes Gateway running")}},
		{name: "keep-alive", in: "WATCHDOG=1", want: notifyMsg{ping: true}},
		{name: "degraded", in: "WATCHDOG=1\nSTATUS=watchdog degraded: event loop progress was late\n", want: notifyMsg{ping: true, status: s("watchdog degraded: event loop progress was late")}},
		{name: "trigger", in: "WATCHDOG=trigger", want: notifyMsg{trigger: true}},
		{name: "interval", in: "WATCHDOG_USEC=2500000", want: notifyMsg{interval: d(2500 * time.Millisecond)}},
		{name: "extend", in: "EXTEND_TIMEOUT_USEC=1000000", want: notifyMsg{extend: d(time.Second)}},
		{name: "extend past a Duration saturates", in: "EXTEND_TIMEOUT_USEC=18446744073709551615", want: notifyMsg{extend: d(maxDuration)}},
		{name: "extend just past a Duration", in: "EXTEND_TIMEOUT_USEC=9223372036854776", want: notifyMsg{extend: d(maxDuration)}},
		{name: "extend of 285 years", in: "EXTEND_TIMEOUT_USEC=9000000000000000", want: notifyMsg{extend: d(9000000000000000 * time.Microsecond)}},
		{name: "stopping", in: "STOPPING=1", want: notifyMsg{stopping: true}},
		{name: "unknown fields ignored", in: "MAINPID=4242\nERRNO=2\nFDSTORE=1", want: notifyMsg{}},
		{name: "READY=0 is not ready", in: "READY=0", want: notifyMsg{}},
		{name: "empty status", in: "STATUS=", want: notifyMsg{status: s("")}},
		{name: "empty", in: "", want: notifyMsg{}},
		{name: "no equals", in: "READY=1\nREADY", bad: true},
		{name: "empty key", in: "=1", bad: true},
		{name: "not utf-8", in: "STATUS=\xff", bad: true},
		{name: "nul", in: "READY=1\x00", bad: true},
		{name: "bad number", in: "WATCHDOG_USEC=soon", bad: true},
		{name: "negative number", in: "WATCHDOG_USEC=-1", bad: true},
		{name: "number past uint64, as systemd refuses it", in: "EXTEND_TIMEOUT_USEC=99999999999999999999", bad: true},
		{name: "keep-alive deadline past a Duration", in: "WATCHDOG_USEC=9223372036854776", bad: true},
		{name: "oversized", in: "STATUS=" + strings.Repeat("x", maxNotify), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNotify([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %q as %+v; want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ready != tc.want.ready || got.stopping != tc.want.stopping || got.ping != tc.want.ping || got.trigger != tc.want.trigger ||
				!eqPtr(got.status, tc.want.status) || !eqPtr(got.interval, tc.want.interval) || !eqPtr(got.extend, tc.want.extend) {
				t.Fatalf("parseNotify(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// Hermes' keep-alive, twice per watchdog deadline for the gateway's whole
// life, is parsed without allocating.
func TestParseKeepAliveAllocatesNothing(t *testing.T) {
	b := []byte("WATCHDOG=1")
	if got := testing.AllocsPerRun(100, func() { _, _ = parseNotify(b) }); got != 0 {
		t.Errorf("parseNotify(%q) allocates %v times, want none", b, got)
	}
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestHermesWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       time.Duration
		bad        bool
	}{
		{name: "set", yaml: "gateway:\n  systemd_watchdog_seconds: 120\n", want: 120 * time.Second},
		{name: "fraction", yaml: "gateway:\n  systemd_watchdog_seconds: 1.5\n", want: 1500 * time.Millisecond},
		{name: "quoted", yaml: "gateway:\n  systemd_watchdog_seconds: \"30\"\n", want: 30 * time.Second},
		{name: "zero", yaml: "gateway:\n  systemd_watchdog_seconds: 0\n"},
		{name: "negative", yaml: "gateway:\n  systemd_watchdog_seconds: -5\n"},
		{name: "absent key", yaml: "gateway:\n  other: 1\nmodel:\n  default: x\n"},
		{name: "null", yaml: "gateway:\n  systemd_watchdog_seconds:\n"},
		{name: "empty file", yaml: ""},
		{name: "other keys of any shape", yaml: "terminal: {cwd: /x}\nlist: [1, 2]\ngateway:\n  systemd_watchdog_seconds: 60\n", want: time.Minute},
		{name: "not a number", yaml: "gateway:\n  systemd_watchdog_seconds: soon\n", bad: true},
		{name: "a list", yaml: "gateway:\n  systemd_watchdog_seconds: [1]\n", bad: true},
		{name: "broken yaml", yaml: "gateway: [\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := testdir.New(t)
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			got, _, err := readHermesWatchdog(hermesConfigPath(home))
			if tc.bad != (err != nil) || got != tc.want {
				t.Fatalf("got %s, %v; want %s, error %v", got, err, tc.want, tc.bad)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		if _, _, err := readHermesWatchdog(hermesConfigPath(testdir.New(t))); err == nil {
			t.Fatal("a missing config.yaml must be reported")
		}
	})
}

// TestHermesConfigCache: config.yaml is parsed again only when its stamp
// changes, or when it was written too recently for its stamp to tell two
// writes apart. A rewrite that keeps the stamp (same inode, size and
// mtime) shows which answer came from the cache.
func TestHermesConfigCache(t *testing.T) {
	home := testdir.New(t)
	path := filepath.Join(home, "config.yaml")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(secs string, mtime time.Time) {
		t.Helper()
		// In place, as an editor that truncates does: the inode stays.
		if err := os.WriteFile(path, []byte("gateway:\n  systemd_watchdog_seconds: "+secs+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	var c hermesConfigCache
	check := func(now time.Time, want time.Duration) {
		t.Helper()
		if got, err := c.watchdogOf(home, now); err != nil || got != want {
			t.Fatalf("watchdog %s, %v; want %s", got, err, want)
		}
	}
	write("30", old)
	check(time.Now(), 30*time.Second)
	write("40", old) // same size and mtime: the stamp cannot tell
	check(time.Now(), 30*time.Second)
	write("50", old.Add(time.Second)) // a new mtime
	check(time.Now(), 50*time.Second)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.watchdogOf(home, time.Now()); err == nil {
		t.Fatal("a config.yaml removed since it was cached must be reported missing")
	}
	// Written just before it was read: not kept, though a same-stamp
	// rewrite follows.
	fresh := time.Now().Truncate(time.Second)
	write("60", fresh)
	check(fresh.Add(time.Second), time.Minute)
	write("70", fresh)
	check(fresh.Add(time.Second), 70*time.Second)
}

func TestReadHeartbeat(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, body string
		bad        bool
	}{
		{name: "epoch", body: `{"pid": 4242, "updated_at": 1795420800.0, "start_time": 1.0, "mem": 1}`},
		{name: "iso", body: `{"pid": 4242, "updated_at": "2026-11-23T08:00:00+00:00"}`},
		{name: "epoch string", body: `{"pid": 4242, "updated_at": "1795420800"}`},
		{name: "no pid", body: `{"updated_at": 1795420800.0}`, bad: true},
		{name: "no time", body: `{"pid": 4242}`, bad: true},
		{name: "bad time", body: `{"pid": 4242, "updated_at": "yesterday"}`, bad: true},
		{name: "garbage", body: `{"pid"`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := testdir.New(t)
			if err := os.MkdirAll(filepath.Join(home, "state"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(heartbeatPath(home), []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			hb, err := readHeartbeat(home)
			if tc.bad {
				if err == nil {
					t.Fatalf("read %+v; want an error", hb)
				}
				return
			}
			if err != nil || hb.PID != 4242 || !hb.UpdatedAt.Equal(at) {
				t.Fatalf("got %+v, %v", hb, err)
			}
		})
	}
}

func TestExitReasonCountsAsFailure(t *testing.T) {
	p := DefaultPolicy()
	var h History
	e := Exit{Code: 0, Reason: ReasonWatchdog, Uptime: time.Hour, At: time.Now()}
	d := p.Decide(&h, e, func() float64 { return 0.5 })
	if h.Streak != 1 || d.Verdict != Restart || !strings.HasPrefix(d.Reason, ReasonWatchdog) {
		t.Fatalf("decision %+v, streak %d", d, h.Streak)
	}
}

// TestKeepAlivesAreComparedByTheMonotonicClock: the keep-alives the reader
// records reach the deadline arithmetic as times that carry the monotonic
// clock, so a step of the wall clock (NTP, an operator, a Raspberry Pi
// setting its clock at boot) neither makes a gateway that keeps pinging
// look hung nor hides one that hung. No test may step the host's wall
// clock; time.Time's String names a monotonic reading ("m=±…") when the
// time carries one, which a time rebuilt from UnixNano, as before, did not.
func TestKeepAlivesAreComparedByTheMonotonicClock(t *testing.T) {
	w := &watchdog{clock: SystemClock{}}
	w.watch = watch{ka: newKeepAlives(w.clock.Now())}
	if _, ok := w.ka.lastAt(); ok {
		t.Fatal("a keep-alive before any was recorded")
	}
	at := w.clock.Now()
	w.ka.record(at)
	got := w.lastKeepAlive()
	if !strings.Contains(got.String(), " m=") {
		t.Fatalf("last keep-alive %v carries no monotonic reading: it would be compared by the wall clock", got)
	}
	if d := got.Sub(at); d != 0 {
		t.Fatalf("last keep-alive is %s off the one recorded", d)
	}

	// With a clock of the tests' own (no monotonic reading), the same
	// arithmetic on its readings.
	base := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	ka := newKeepAlives(base)
	for _, after := range []time.Duration{0, time.Nanosecond, 5 * time.Second, 90 * time.Minute} {
		ka.record(base.Add(after))
		if got, ok := ka.lastAt(); !ok || !got.Equal(base.Add(after)) {
			t.Errorf("recorded %s after base, read back %v (%v)", after, got, ok)
		}
	}
}

// TestHeartbeatAgesByTheMonotonicClock: Hermes' heartbeat says when it was
// written by the wall clock, which may have been stepped (NTP, an operator,
// a Raspberry Pi setting its clock at boot) between that write and our
// read. Our readings carry the monotonic clock; the file's updated_at is
// set below as a wall clock stepped by hours would make it look.
func TestHeartbeatAgesByTheMonotonicClock(t *testing.T) {
	begun := time.Now() // carries a monotonic reading, as SystemClock's do
	w := &watchdog{}
	w.begun = begun
	at := func(d time.Duration) time.Time { return begun.Add(d) }
	wall := func(d time.Duration) time.Time { return begun.Add(d).Round(0) } // a time read from a file
	steps := []struct {
		what    string
		now     time.Time
		updated time.Time
		want    time.Duration
	}{
		{"first read, written 2 s ago", at(10 * time.Second), wall(8 * time.Second), 2 * time.Second},
		{"unchanged 20 s later", at(30 * time.Second), wall(8 * time.Second), 22 * time.Second},
		{"written again, just before the wall clock stepped 5 h forward", at(40 * time.Second), wall(40*time.Second - 5*time.Hour), 10 * time.Second},
		{"unchanged since", at(45 * time.Second), wall(40*time.Second - 5*time.Hour), 15 * time.Second},
		{"written after the wall clock stepped 5 h back", at(50 * time.Second), wall(50*time.Second + 5*time.Hour), 0},
		{"and then never again: it ages by our clock", at(50*time.Second + 10*time.Minute), wall(50*time.Second + 5*time.Hour), 10 * time.Minute},
	}
	for _, s := range steps {
		if got := w.beatAge(s.now, s.updated); got != s.want {
			t.Errorf("%s: age %s, want %s", s.what, got, s.want)
		}
	}

	// A heartbeat left by an earlier gateway whose pid ours reuses is no
	// older, at its first read, than the watch of ours.
	w = &watchdog{}
	w.begun = begun
	if got := w.beatAge(at(3*time.Second), wall(-3*time.Hour)); got != 3*time.Second {
		t.Errorf("a 3 h old heartbeat naming our pid, read 3 s into our start: age %s, want 3s", got)
	}
}
