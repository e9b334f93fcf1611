package supervisor

import (
	"os"
	"testing"
	"time"
)

// TestStateFileWrittenAgainAfterAFailedWrite: a write of the state file
// that fails (here a directory in its place; under Wine a reader holding
// the file open, which failed a CI run) is tried again soon, not at the
// next transition, which a settled supervisor may not make for days: a
// shell's status was left naming a gateway that was gone.
func TestStateFileWrittenAgainAfterAFailedWrite(t *testing.T) {
	h := startHarness(t, testPolicy())
	first := h.waitReady()
	path := h.layout.SupervisorState()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// An empty directory: no file replaces it, on any OS, and Wine (whose
	// Go cannot remove a directory tree) removes it.
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(2 * DefaultPolicy().ResetAfter)
	if err := killHard(first.Child.PID); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor("the next ready gateway", func(s *Status) bool {
		return s.State == Running && s.Child != nil && s.Child.Ready && s.Child.PID != first.Child.PID
	})
	if h.logs.FilterMessage("could not write the supervisor state file; trying again").Len() == 0 {
		t.Fatal("no failed write of the state file was logged")
	}
	// The supervisor now makes no transition of its own; only its retry
	// can write the file once it may.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// Polls with a deadline: the write happens on the supervisor's loop.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f, err := ReadStatusFile(path)
		// The line follows the write: both are waited for.
		if err == nil && f.Child != nil && f.Child.PID == next.Child.PID && h.logs.FilterMessage("wrote the supervisor state file again").Len() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state file still reads %+v (%v), want gateway %d", f, err, next.Child.PID)
		}
	}
	if h.logs.FilterMessage("wrote the supervisor state file again").Len() != 1 {
		t.Error("the recovery was not logged once")
	}
}
