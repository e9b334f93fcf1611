package supervisor

import (
	"testing"
	"time"
)

// FuzzParseNotify feeds sd_notify datagrams, which any process that finds
// the socket may send: no input may panic, and what parses stays in bounds.
func FuzzParseNotify(f *testing.F) {
	for _, s := range []string{
		"READY=1\nSTATUS=Hermes Gateway running", "WATCHDOG=1", "WATCHDOG=trigger", "STOPPING=1",
		"WATCHDOG_USEC=2000000", "EXTEND_TIMEOUT_USEC=99999999999999999999", "=", "\xff", "A=B\n\n\nC",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseNotify(b)
		if err != nil {
			return
		}
		if len(b) > maxNotify {
			t.Fatalf("accepted %d bytes", len(b))
		}
		for _, d := range []*time.Duration{m.interval, m.extend} {
			if d != nil && *d < 0 {
				t.Fatalf("negative duration %s from %q", *d, b)
			}
		}
	})
}
