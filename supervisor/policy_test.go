package supervisor

import (
	"encoding/json"
	"reflect"
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
			{Exit{Code: -1, Signal: "SIGKILL", At: t0, Uptime: time.Second}, Restart, 0, "killed by SIGKILL"},
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
	for _, c := range []struct {
		streak int
		lo, hi time.Duration // with rnd 0 and rnd just below 1
	}{
		{2, 800 * time.Millisecond, 1200 * time.Millisecond},
		{3, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{7, 25600 * time.Millisecond, 38400 * time.Millisecond},
		// 64 s ±20 %: jitter is applied first, so the cap holds.
		{8, 51200 * time.Millisecond, 60 * time.Second},
		{40, 60 * time.Second, 60 * time.Second},
	} {
		lo, hi := p.delay(c.streak, func() float64 { return 0 }), p.delay(c.streak, func() float64 { return 0.999999 })
		if lo < c.lo-time.Millisecond || lo > c.lo+time.Millisecond || hi > c.hi || hi < c.hi-time.Millisecond {
			t.Errorf("streak %d: delay range [%s, %s], want [%s, %s]", c.streak, lo, hi, c.lo, c.hi)
		}
		if hi > p.MaxBackoff {
			t.Errorf("streak %d: %s exceeds max backoff %s", c.streak, hi, p.MaxBackoff)
		}
	}
}

func TestExitJSONUptime(t *testing.T) {
	e := Exit{Code: 1, At: time.Unix(100, 0).UTC(), Uptime: 1500 * time.Millisecond}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"uptime":"1.5s","uptime_seconds":1.5`) {
		t.Fatalf("marshalled %s", b)
	}
	for _, in := range []string{string(b), `{"code":1,"at":"1970-01-01T00:01:40Z","uptime":1500000000}`} {
		var got Exit
		if err := json.Unmarshal([]byte(in), &got); err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("unmarshal %s: got %+v, %v; want %+v", in, got, err, e)
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
