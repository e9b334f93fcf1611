package main

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// Our unit's WATCHDOG_USEC past what a time.Duration holds in nanoseconds
// (about 292 years) wrapped when multiplied: 2^64/1000 µs became a ping
// every 192 ns, and the supervisor sent systemd some 18,000 WATCHDOG=1 a
// second from a busy loop. Such a deadline saturates instead, as the
// gateway's own WATCHDOG_USEC= does, and is never shorter than a smaller one.
func TestOwnWatchdogBeyondADurationSaturates(t *testing.T) {
	longest := time.Duration(math.MaxInt64 / int64(time.Microsecond) * int64(time.Microsecond) / 2)
	for _, usec := range []uint64{
		math.MaxInt64 / uint64(time.Microsecond),   // the longest that fits
		math.MaxInt64/uint64(time.Microsecond) + 1, // the first that does not
		18446744073709552,                          // 2^64 ns and a little: wrapped to 384 ns
		math.MaxInt64,                              // the largest WATCHDOG_USEC ParseInt takes
	} {
		env := map[string]string{"WATCHDOG_USEC": strconv.FormatUint(usec, 10)}
		if got := ownWatchdog(func(k string) string { return env[k] }, 42); got < longest {
			t.Errorf("WATCHDOG_USEC=%d: a ping every %s, want every %s or more", usec, got, longest)
		}
	}
}
