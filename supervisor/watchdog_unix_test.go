//go:build unix

package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// hermesChild runs testdata/hermes_notify.py, a Hermes-shaped gateway in
// standard-library Python, in mode.
func hermesChild(t *testing.T, mode ...string) func(*Config) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "hermes_notify.py"))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Command = append([]string{py, script}, mode...) }
}

func both(fs ...func(*Config)) func(*Config) {
	return func(c *Config) {
		for _, f := range fs {
			f(c)
		}
	}
}

func watchdogOf(d time.Duration) func(*Config) { return func(c *Config) { c.Watchdog = d } }

func armed(s *Status) bool {
	return s.State == Running && s.Child != nil && s.Child.Watchdog != nil && s.Child.Watchdog.Armed
}

// waitHangRestart waits for the gateway that was pid to be taken down as
// hung and a new one to be ready, and returns the new status.
func (h *harness) waitHangRestart(pid int) *Status {
	h.t.Helper()
	st := h.waitFor("a new gateway after the hang", func(s *Status) bool {
		return s.State == Running && s.Child != nil && s.Child.Ready && s.Child.PID != pid && s.LastExit != nil
	})
	if st.LastExit.Reason != ReasonWatchdog || st.Restarts != 1 {
		h.t.Fatalf("last exit %+v, restarts %d; want reason %q and one restart", st.LastExit, st.Restarts, ReasonWatchdog)
	}
	return st
}

func TestHermesChildReadyThroughNotify(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "hermes"), watchdogOf(time.Hour)))
	st := h.waitFor("a ready gateway and its STATUS=", func(s *Status) bool {
		return s.State == Running && s.Child != nil && s.Child.Ready && s.Child.Status == "Hermes Gateway running"
	})
	if by := st.Child.ReadyBy; by != "sd_notify READY=1" && by != "gateway_state.json says running" {
		t.Fatalf("ready by %q", by)
	}
	if w := st.Child.Watchdog; w == nil || time.Duration(w.Interval) != time.Hour {
		t.Fatalf("watchdog %+v", w)
	}
	// A planned stop: Hermes says STOPPING=1 and exits 0, which is no hang.
	r := h.sup.Do(t.Context(), "stop")
	if !r.OK || r.Status.LastExit == nil || r.Status.LastExit.Code != 0 || r.Status.LastExit.Reason != "" {
		t.Fatalf("stop: %+v, last exit %+v", r, r.Status.LastExit)
	}
}

func TestHungGatewayIsReplaced(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "hang"), watchdogOf(time.Second)))
	st := h.waitFor("an armed watchdog", armed)
	next := h.waitHangRestart(st.Child.PID)
	if !strings.HasPrefix(next.LastExit.String(), ReasonWatchdog) {
		t.Fatalf("exit described as %q", next.LastExit)
	}
}

func TestDemoGatewayHangDumpsStacks(t *testing.T) {
	h := startHarnessWith(t, watchdogOf(time.Second), "-hang-after", "1500ms")
	st := h.waitFor("an armed watchdog", armed)
	h.waitHangRestart(st.Child.PID)
	// The demo stands in for faulthandler: SIGUSR2 reached it before the kill.
	b, err := os.ReadFile(filepath.Join(h.layout.Home, "logs", "gateway_faulthandler.log"))
	if err != nil || !strings.Contains(string(b), "stack dump requested") {
		t.Fatalf("no stack dump: %q, %v", b, err)
	}
}

func TestRegularKeepAlivesKeepTheGateway(t *testing.T) {
	// Keep-alives every 150 ms against a 300 ms deadline for 3 s: ten
	// deadlines that each keep-alive moved (or the alarm re-armed itself
	// past), then a real hang. Caught before it stopped pinging would be a
	// deadline the keep-alives did not move.
	h := startHarnessWith(t, watchdogOf(300*time.Millisecond), "-hang-after", "3s")
	st := h.waitFor("an armed watchdog", armed)
	next := h.waitHangRestart(st.Child.PID)
	if up := next.LastExit.Uptime; up < 3*time.Second {
		t.Fatalf("taken down as hung after %s, while it still sent keep-alives", up)
	}
}

func TestStoppedGatewayIsReplaced(t *testing.T) {
	h := startHarnessWith(t, watchdogOf(time.Second))
	st := h.waitFor("an armed watchdog", armed)
	if err := syscall.Kill(st.Child.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h.waitHangRestart(st.Child.PID)
}

func TestWatchdogTrigger(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "trigger"), watchdogOf(time.Hour)))
	st := h.waitFor("an armed watchdog", armed)
	h.waitFor("the trigger", func(s *Status) bool {
		return s.State == Stopping && strings.Contains(s.Reason, "WATCHDOG=trigger")
	})
	h.waitHangRestart(st.Child.PID)
}

func TestIntervalChangeFromTheGateway(t *testing.T) {
	// Only the gateway's own WATCHDOG_USEC=300000 can catch it within an hour.
	h := startHarnessWith(t, both(hermesChild(t, "interval"), watchdogOf(time.Hour)))
	st := h.waitFor("an armed watchdog", armed)
	h.waitHangRestart(st.Child.PID)
}

func TestSilentGatewayIsNeverKilled(t *testing.T) {
	// It never speaks the protocol, so the watchdog never arms; it outlives
	// many deadlines and exits on its own.
	h := startHarnessWith(t, both(hermesChild(t, "silent", "2"), watchdogOf(100*time.Millisecond),
		func(c *Config) { c.ReadyTimeout = 100 * time.Millisecond }))
	st := h.waitFor("the gateway's own exit", func(s *Status) bool { return s.LastExit != nil })
	if e := st.LastExit; e.Code != 3 || e.Reason != "" || e.Signal != "" {
		t.Fatalf("last exit %+v: the silent gateway was killed", e)
	}
}

func TestGarbageDatagramsAreIgnored(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "garbage"), watchdogOf(time.Hour)))
	st := h.waitFor("the status after the garbage", func(s *Status) bool {
		if s.Child != nil && (s.Child.Status == "garbage" || s.Child.Status == "oversized") {
			t.Fatalf("a malformed datagram was believed: %q", s.Child.Status)
		}
		return s.Child != nil && s.Child.Status == "after garbage"
	})
	if w := st.Child.Watchdog; w == nil || time.Duration(w.Interval) != time.Hour {
		t.Fatalf("a malformed WATCHDOG_USEC changed the deadline: %+v", w)
	}
}

func TestWatchdogOffByDefault(t *testing.T) {
	// No Hermes config: no WATCHDOG_USEC, so Hermes sends nothing and the
	// gateway is ready by its state file.
	h := startHarnessWith(t, hermesChild(t, "hermes"))
	st := h.waitReady()
	if st.Child.ReadyBy != "gateway_state.json says running" || st.Child.Watchdog != nil {
		t.Fatalf("ready by %q, watchdog %+v", st.Child.ReadyBy, st.Child.Watchdog)
	}
}

func TestWatchdogFromHermesConfig(t *testing.T) {
	h := startHarnessWith(t, func(c *Config) {
		hermesChild(t, "hang")(c)
		if err := os.WriteFile(filepath.Join(c.Layout.Home, "config.yaml"), []byte("gateway:\n  systemd_watchdog_seconds: 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	st := h.waitFor("an armed watchdog", armed)
	h.waitHangRestart(st.Child.PID)
}

func TestStaleHeartbeatIsAHang(t *testing.T) {
	// --hang-after: a heartbeat naming our gateway that stops being updated.
	h := startHarnessWith(t, func(c *Config) { c.HangAfter = time.Second })
	st := h.waitReady()
	if err := os.MkdirAll(filepath.Join(h.layout.Home, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"pid": ` + strconv.Itoa(st.Child.PID) + `, "updated_at": "` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`
	if err := lockstore.WriteFileAtomic(heartbeatPath(h.layout.Home), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the heartbeat seen", func(s *Status) bool {
		return s.Child != nil && s.Child.Watchdog != nil && s.Child.Watchdog.HeartbeatSeen
	})
	h.waitHangRestart(st.Child.PID)
}

// EXTEND_TIMEOUT_USEC during a stop is honoured as systemd honours it
// (from now, to be repeated before it passes) but never past the stop
// timeout plus MaxStopExtension, whatever the gateway asks: 2^64-1 µs once
// pushed the kill out by 285 years. What the log and the status say of
// the deadline is the deadline the kill keeps, and our own service
// manager hears of every extension.
func TestStopExtensionIsCapped(t *testing.T) {
	const stopTimeout, maxExt = 100 * time.Millisecond, 2 * time.Second
	for _, tc := range []struct {
		mode      string
		atCeiling bool // killed at the ceiling, not at the gateway's own last deadline
	}{
		{"extend-huge", true},
		{"extend-once", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var mu sync.Mutex
			var told []string
			h := startHarnessWith(t, both(hermesChild(t, tc.mode), watchdogOf(time.Hour), func(c *Config) {
				c.StopTimeout, c.MaxStopExtension = stopTimeout, maxExt
				c.Notify = func(s string) { mu.Lock(); told = append(told, s); mu.Unlock() }
			}))
			h.waitFor("a ready gateway", func(s *Status) bool { return s.State == Running && s.Child != nil && s.Child.Ready })
			r := h.sup.Do(t.Context(), "stop")
			if !r.OK || r.Status.LastExit == nil || r.Status.LastExit.Code == 0 {
				t.Fatalf("stop: %+v, last exit %+v", r, r.Status.LastExit)
			}
			ext := h.logs.FilterMessageSnippet("extended its stop").All()
			kill := h.logs.FilterMessageSnippet("did not stop in time").All()
			if len(ext) != 1 || len(kill) != 1 {
				t.Fatalf("%d extension lines and %d kill lines logged, want one each", len(ext), len(kill))
			}
			e, k := ext[0].ContextMap(), kill[0].ContextMap()
			ceiling, extendedBy := e["ceiling"].(time.Time), k["extended_by"].(time.Duration)
			if tc.atCeiling {
				if extendedBy != maxExt || !strings.Contains(ext[0].Message, "more than --max-stop-extension") || e["kill_at"] != ceiling {
					t.Fatalf("extended by %s, logged %q %v; want the kill at the ceiling, %s after the stop timeout", extendedBy, ext[0].Message, e, maxExt)
				}
			} else if extendedBy <= 0 || extendedBy >= maxExt {
				t.Fatalf("one 300 ms extension moved the kill by %s; want by less than %s, since it was not repeated", extendedBy, maxExt)
			}
			// The status of the stop named the deadline the kill kept.
			var killAt *time.Time
			for {
				select {
				case s := <-h.states:
					if s.Child != nil && s.Child.KillAt != nil {
						killAt = s.Child.KillAt
					}
					continue
				default:
				}
				break
			}
			if killAt == nil || killAt.After(ceiling) || (tc.atCeiling && !killAt.Equal(ceiling)) {
				t.Fatalf("status said the tree dies at %v; the ceiling was %v", killAt, ceiling)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range told {
				if v, ok := strings.CutPrefix(s, "EXTEND_TIMEOUT_USEC="); ok {
					us, err := strconv.ParseInt(v, 10, 64)
					if err != nil || time.Duration(us)*time.Microsecond > maxExt+stopTimeout+ownStopGrace {
						t.Fatalf("our service manager was told %q", s)
					}
					return
				}
			}
			t.Fatalf("our service manager heard of no extension: %q", told)
		})
	}
}

// A gateway killed before it was ever ready is restarted at once into the
// same state, Starting: the state file must still come to name the new
// gateway, or a successor supervisor could not prove it ours.
func TestRestartBeforeReadyIsRecorded(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "silent", "600"), func(c *Config) { c.ReadyTimeout = time.Hour }))
	first := h.waitState(Starting)
	h.clock.advance(2 * DefaultPolicy().ResetAfter) // a healthy run: the restart is at once
	if err := syscall.Kill(first.Child.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor("the next gateway recorded", func(s *Status) bool {
		return s.State == Starting && s.Child != nil && s.Child.PID != first.Child.PID
	})
	// The file is written at the start's housekeep, a few milliseconds
	// later, in the supervisor's goroutine: polled, with a deadline.
	var st *Status
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var err error
		if st, err = ReadStatusFile(h.layout.SupervisorState()); err != nil {
			t.Fatal(err)
		}
		if st.Child != nil && st.Child.PID == next.Child.PID || time.Now().After(deadline) {
			break
		}
	}
	if st.Child == nil || st.Child.PID != next.Child.PID || st.Child.StartTime == nil {
		t.Fatalf("state file names %+v, want the new gateway %d with its start time", st.Child, next.Child.PID)
	}
}

// TestHermesConfigCacheDropsAHostileReplacement: a config.yaml read and
// kept, then replaced by a link to another file, a FIFO, a directory or a
// file over the read bound, is read again and refused. Neither the link's
// target nor what the cache held is believed, and the refusal is not kept.
func TestHermesConfigCacheDropsAHostileReplacement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, path string)
	}{
		{"link to another file", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "other.yaml")
			if err := os.WriteFile(other, []byte("gateway:\n  systemd_watchdog_seconds: 99\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"over the bound", func(t *testing.T, path string) {
			big := "gateway:\n  systemd_watchdog_seconds: 99\n" + strings.Repeat("# x\n", maxHermesConfig/4+1)
			if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			path := hermesConfigPath(home)
			if err := os.WriteFile(path, []byte("gateway:\n  systemd_watchdog_seconds: 30\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			var c hermesConfigCache
			if d, err := c.watchdogOf(home, time.Now()); err != nil || d != 30*time.Second || !c.kept {
				t.Fatalf("the first read: %s, %v, kept %v; want 30s, kept", d, err, c.kept)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			tc.replace(t, path)
			for i := range 2 {
				if d, err := c.watchdogOf(home, time.Now()); err == nil || d != 0 {
					t.Fatalf("read %d after the replacement: %s, %v; want an error and no deadline", i+1, d, err)
				}
			}
		})
	}
}
