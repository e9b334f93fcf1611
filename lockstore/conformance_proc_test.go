package lockstore

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestRunningProc: a gateway whose name Hermes' text reads of /proc fail
// on is still the running gateway the supervisor waits for, as Hermes'
// get_running_pid finds it.
func TestRunningProc(t *testing.T) {
	want := map[string]bool{"U02": true, "U03": true, "U10": true}
	bin := conformance.NewBin(t)
	for _, row := range conformance.RowsHere() {
		running, ok := want[row.ID]
		if !ok {
			continue
		}
		t.Run(row.ID, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			row.Build(e)
			s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
			if got, ok := s.Running(context.Background()); ok != running {
				t.Fatalf("%s (%s): running=%v (%+v), want %v", row.ID, row.Layout, ok, got, running)
			}
		})
	}
}
