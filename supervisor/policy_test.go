package supervisor

import (
	"strings"
	"testing"
	"time"
)

func TestPolicyDecide(t *testing.T) {
	p := DefaultPolicy()
	p.Jitter = 0
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	crash := func(at time.Duration, up time.Duration) Exit {
		return Exit{Code: 1, At: t0.Add(at), Uptime: up}
	}
	type step struct {
		exit    Exit
		verdict Verdict
		delay   time.Duration
		reason  string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first crash after a healthy run restarts at once", []step{
			{crash(0, 2*time.Hour), Restart, 0, "exit 1"},
		}},
		{"backoff doubles to the cap", []step{
			{crash(0, time.Second), Restart, 0, ""},
			{crash(time.Second, time.Second), Restart, time.Second, ""},
			{crash(2*time.Second, time.Second), Restart, 2 * time.Second, ""},
			{crash(3*time.Second, time.Second), Restart, 4 * time.Second, ""},
		}},
		{"a healthy run resets the streak", []step{
			{crash(0, time.Second), Restart, 0, ""},
			{crash(time.Second, time.Second), Restart, time.Second, ""},
			{crash(3*time.Minute, 2*time.Minute), Restart, 0, ""},
		}},
		{"exit 75 restarts at once without penalty", []step{
			{crash(0, time.Second), Restart, 0, ""},
			{Exit{Code: ExitRestart, At: t0.Add(time.Minute), Uptime: 30 * time.Second}, Restart, 0, "exit 75"},
			{crash(2*time.Minute, time.Second), Restart, time.Second, ""},
		}},
		{"exit 75 too soon counts as a failure", []step{
			{crash(0, time.Second), Restart, 0, ""},
			{Exit{Code: ExitRestart, At: t0.Add(time.Second), Uptime: 10 * time.Millisecond}, Restart, time.Second, ""},
		}},
		{"exit 78 fails", []step{
			{Exit{Code: ExitConfig, At: t0, Uptime: time.Hour}, Fail, 0, "configuration error"},
		}},
		{"killed by a signal is a failure", []step{
			{Exit{Code: -1, Signal: "killed", At: t0, Uptime: time.Second}, Restart, 0, "killed"},
		}},
		{"start error is a failure", []step{
			{Exit{Code: -1, StartError: "no such file", At: t0}, Restart, 0, "failed to start"},
			{Exit{Code: -1, StartError: "no such file", At: t0.Add(time.Second)}, Restart, time.Second, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h History
			for i, s := range tt.steps {
				d := p.Decide(&h, s.exit, func() float64 { return 0.5 })
				if d.Verdict != s.verdict || d.Delay != s.delay || !strings.Contains(d.Reason, s.reason) {
					t.Fatalf("step %d: got %+v, want verdict %v delay %s reason containing %q", i, d, s.verdict, s.delay, s.reason)
				}
			}
		})
	}
}

func TestPolicyCrashLoop(t *testing.T) {
	p := DefaultPolicy()
	p.CrashLoopMax, p.CrashLoopWindow = 3, time.Minute
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var h History
	at := func(s int) Exit {
		return Exit{Code: 1, At: t0.Add(time.Duration(s) * time.Second), Uptime: time.Second}
	}
	for _, s := range []int{0, 10} {
		if d := p.Decide(&h, at(s), func() float64 { return 0 }); d.Verdict != Restart {
			t.Fatalf("failure at %ds: %+v", s, d)
		}
	}
	// The first failure has left the window: still no loop.
	if d := p.Decide(&h, at(65), func() float64 { return 0 }); d.Verdict != Restart {
		t.Fatalf("failure at 65s: %+v", d)
	}
	d := p.Decide(&h, at(69), func() float64 { return 0 })
	if d.Verdict != Fail || !strings.Contains(d.Reason, "crash loop: 3 failures") {
		t.Fatalf("third failure in a minute: %+v", d)
	}
}

func TestPolicyJitterAndCap(t *testing.T) {
	p := DefaultPolicy()
	for streak, want := range map[int]time.Duration{2: time.Second, 3: 2 * time.Second, 8: 60 * time.Second, 40: 60 * time.Second} {
		lo, hi := p.delay(streak, func() float64 { return 0 }), p.delay(streak, func() float64 { return 0.999999 })
		if lo < time.Duration(float64(want)*0.8)-time.Millisecond || hi > time.Duration(float64(want)*1.2) || lo >= hi {
			t.Errorf("streak %d: delay range [%s, %s], want within 20%% of %s", streak, lo, hi, want)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	bad := []func(*Policy){
		func(p *Policy) { p.InitialBackoff = 0 },
		func(p *Policy) { p.MaxBackoff = p.InitialBackoff / 2 },
		func(p *Policy) { p.ResetAfter = -1 },
		func(p *Policy) { p.Jitter = 1 },
		func(p *Policy) { p.CrashLoopMax = 0 },
		func(p *Policy) { p.CrashLoopWindow = 0 },
		func(p *Policy) { p.MinUptime = -time.Second },
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for i, mut := range bad {
		p := DefaultPolicy()
		mut(&p)
		if p.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, p)
		}
	}
}
