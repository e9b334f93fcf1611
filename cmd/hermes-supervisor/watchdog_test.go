package main

import (
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

func TestOwnWatchdog(t *testing.T) {
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"2000000", "", time.Second},
		{"2000000", "42", time.Second},
		{"2000000", "43", 0}, // meant for another process
		{"0", "", 0},
		{"-5", "", 0},
		{"soon", "", 0},
	} {
		env := map[string]string{"WATCHDOG_USEC": tc.usec, "WATCHDOG_PID": tc.pid}
		if got := ownWatchdog(func(k string) string { return env[k] }, 42); got != tc.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: got %s, want %s", tc.usec, tc.pid, got, tc.want)
		}
	}
}

func TestHangSettings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		set       bool
		watchdog  time.Duration
		hangAfter time.Duration
		want      time.Duration
		bad       bool
	}{
		{name: "unset: Hermes decides", want: 0},
		{name: "set", set: true, watchdog: time.Minute, want: time.Minute},
		{name: "set to 0: off", set: true, want: supervisor.WatchdogOff},
		{name: "negative", set: true, watchdog: -time.Second, bad: true},
		{name: "negative hang-after", hangAfter: -time.Second, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, h, err := hangSettings(tc.set, &runFlags{watchdog: tc.watchdog, hangAfter: tc.hangAfter})
			if tc.bad != (err != nil) || !tc.bad && (w != tc.want || h != tc.hangAfter) {
				t.Fatalf("got %s, %s, %v", w, h, err)
			}
		})
	}
}
