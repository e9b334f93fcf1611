package alarm

import (
	"testing"
	"time"
)

// waitAlarm waits for a fire, failing after limit, and returns how long
// the wait took.
func waitAlarm(t *testing.T, a *Alarm, limit time.Duration) time.Duration {
	t.Helper()
	begun := time.Now()
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("the alarm did not fire within %s", limit)
	}
	return time.Since(begun)
}

func newAlarm(t *testing.T) *Alarm {
	t.Helper()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestAlarmFires(t *testing.T) {
	a := newAlarm(t)
	a.Reset(0) // a deadline already past fires at once
	waitAlarm(t, a, 10*time.Second)
	a.Reset(50 * time.Millisecond)
	// A timer never fires early: the lower bound holds on any machine.
	if took := waitAlarm(t, a, 10*time.Second); took < 40*time.Millisecond {
		t.Fatalf("fired after %s, set for 50ms", took)
	}
}

func TestAlarmStopAndReset(t *testing.T) {
	a := newAlarm(t)
	a.Reset(20 * time.Millisecond)
	a.Stop()
	// The stopped 20 ms alarm must not end this wait: only the new one.
	a.Reset(300 * time.Millisecond)
	if took := waitAlarm(t, a, 10*time.Second); took < 250*time.Millisecond {
		t.Fatalf("fired after %s: the stopped deadline fired", took)
	}
	// A fire nobody waited for yet is dropped by a Reset.
	a.Reset(0)
	deadline := time.Now().Add(10 * time.Second)
	for !a.firedForTest() {
		if time.Now().After(deadline) {
			t.Fatal("the alarm never fired")
		}
		time.Sleep(time.Millisecond) // polled: a fire with no waiter has no event to wait on
	}
	a.Reset(300 * time.Millisecond)
	if took := waitAlarm(t, a, 10*time.Second); took < 250*time.Millisecond {
		t.Fatalf("fired after %s: a stale fire survived Reset", took)
	}
}

func TestAlarmCloseEndsWait(t *testing.T) {
	a := newAlarm(t)
	a.Reset(time.Hour)
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait returned nil after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end Wait")
	}
}
