//go:build !windows

package service

import (
	"strings"
	"testing"
	"time"
)

func TestUnitWatchdogSec(t *testing.T) {
	for _, tc := range []struct {
		watchdog time.Duration
		want     string // "" means no WatchdogSec= line
	}{
		{0, ""},
		{30 * time.Second, "WatchdogSec=30000ms\n"},
		{1500 * time.Millisecond, "WatchdogSec=1500ms\n"},
		{time.Microsecond, "WatchdogSec=1ms\n"},
	} {
		c := ann(false)
		c.Watchdog = tc.watchdog
		unit := string(mustUnit(t, c))
		got := strings.Count(unit, "WatchdogSec=")
		if tc.want == "" && got != 0 || tc.want != "" && (got != 1 || !strings.Contains(unit, tc.want)) {
			t.Errorf("watchdog %s: unit has %d WatchdogSec= lines, want %q:\n%s", tc.watchdog, got, tc.want, unit)
		}
	}
}
