package chaos

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// TestGatewaySIGKILL kills the gateway child at random moments: a healthy
// one, then its successor 0-30 ms after it was started (before, while or
// after it writes its pid and lock files). Every time the gateway must be
// healthy again, the supervisor never `failed`, and a foreign gateway
// sharing the lock dir keeps its process and its files.
func TestGatewaySIGKILL(t *testing.T) {
	r := rng(t)
	h := newHome(t, "")
	foreign := newHome(t, h.LockDir)
	fg := foreign.start(t, demogateway.Command, "-token", "foreign")
	foreignLock := h.ScopedLock(demogateway.Scope, "foreign")
	waitFor(t, "the foreign gateway's lock", func() bool { return recordPID(foreignLock) == fg.cmd.Process.Pid })

	// The restart policy is the user's to set; a crash loop of 1000 kills
	// is what this test does on purpose.
	sup := h.start(t, "run", "--demo", "--initial-backoff=1ms", "--max-backoff=10ms", "--crash-loop-max=1000000")
	st := h.waitHealthy(t, sup, 0)
	ourLock := h.ScopedLock(demogateway.Scope, "demo-token")
	tried, survived, early := 0, 0, 0
	// The second kill of each pair lands anywhere in twice the time a
	// successor took to become ready last time, so that kills fall before,
	// during and after it writes its files, however fast this build is.
	startup := 30 * time.Millisecond
	for tried < *kills {
		pid := st.Child.PID
		_ = syscall.Kill(pid, syscall.SIGKILL)
		n := 1
		var killed time.Time
		if tried+1 < *kills {
			next := h.waitChild(t, sup, "a successor", func(st *supervisor.Status) bool { return st.Child != nil && st.Child.PID != pid })
			time.Sleep(time.Duration(r.Int64N(int64(2 * startup))))
			if recordPID(h.PIDFile()) != next.Child.PID {
				early++
			}
			killed = time.Now()
			_ = syscall.Kill(next.Child.PID, syscall.SIGKILL)
			pid, n = next.Child.PID, 2
		}
		tried += n
		st = h.waitHealthy(t, sup, pid)
		if n == 2 {
			startup = max(time.Since(killed), time.Millisecond)
		}
		if got := recordPID(h.PIDFile()); got != st.Child.PID {
			t.Fatalf("kill %d: gateway.pid names %d, the healthy gateway is %d", tried, got, st.Child.PID)
		}
		if got := recordPID(ourLock); got != st.Child.PID {
			t.Fatalf("kill %d: our scoped lock names %d, the healthy gateway is %d", tried, got, st.Child.PID)
		}
		if !alive(fg.cmd.Process.Pid) || recordPID(foreignLock) != fg.cmd.Process.Pid || recordPID(foreign.PIDFile()) != fg.cmd.Process.Pid {
			t.Fatalf("kill %d: the foreign gateway or its files were touched\n%s", tried, sup.out)
		}
		survived += n
	}
	h.stopClean(t, sup)
	if names := lockFiles(t, h.LockDir); len(names) != 1 || names[0] != filepath.Base(foreignLock) {
		t.Fatalf("lock dir after stop: %v, want only the foreign gateway's lock", names)
	}
	tally.add(count{"1. gateway SIGKILL at random moments", tried, survived,
		fmt.Sprintf("healthy again every time, never `failed`, gateway.pid and the lock name the new child, a foreign gateway in the same lock dir untouched; %d kills hit a successor that had not yet written gateway.pid", early)})
}

// waitFor polls cond for up to 30 s; explain, if given, says what was seen.
func waitFor(t *testing.T, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var seen string
			for _, f := range explain {
				seen += "\n" + f()
			}
			t.Fatalf("no %s within 30 s%s", what, seen)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
