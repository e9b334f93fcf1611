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
	failed := h.logged("could not write the supervisor state file; trying again")
	h.clock.advance(2 * DefaultPolicy().ResetAfter)
	if err := killHard(first.Child.PID); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor("the next ready gateway", func(s *Status) bool {
		return s.State == Running && s.Child != nil && s.Child.Ready && s.Child.PID != first.Child.PID
	})
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("no failed write of the state file was logged")
	}
	// The supervisor now makes no transition of its own; only its retry
	// can write the file once it may.
	wrote := h.logged("wrote the supervisor state file again")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wrote: // logged just after the write
	case <-time.After(30 * time.Second):
		t.Fatal("the state file was not written again")
	}
	if f, err := ReadStatusFile(path); err != nil || f.Child == nil || f.Child.PID != next.Child.PID {
		t.Fatalf("the state file reads %+v (%v), want gateway %d", f, err, next.Child.PID)
	}
	if n := h.logs.FilterMessage("wrote the supervisor state file again").Len(); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
}
