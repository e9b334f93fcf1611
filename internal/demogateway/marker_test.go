package demogateway

import (
	"os"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

func TestConsumePlannedStop(t *testing.T) {
	l := lockstore.Layout{Home: testdir.New(t)}
	start := int64(881234)
	other := int64(5)
	self := procstate.Identity{PID: 4242, StartTime: &start}
	now := time.Now()
	tests := []struct {
		name   string
		target procstate.Identity
		at     time.Time
		raw    string
		want   bool
	}{
		{name: "matching", target: self, at: now, want: true},
		{name: "pid only", target: procstate.Identity{PID: 4242}, at: now, want: true},
		{name: "other pid", target: procstate.Identity{PID: 4243, StartTime: &start}, at: now},
		{name: "other start", target: procstate.Identity{PID: 4242, StartTime: &other}, at: now},
		{name: "expired", target: self, at: now.Add(-2 * lockstore.MarkerTTL)},
		{name: "garbage", raw: "{"},
		{name: "Z suffix accepted", raw: `{"target_pid": 4242, "target_start_time": 881234, "stopper_pid": 1, "written_at": "` + now.UTC().Format("2006-01-02T15:04:05Z") + `"}`, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.raw != "" {
				if err := os.WriteFile(l.PlannedStopMarker(), []byte(tt.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := lockstore.WritePlannedStop(l, tt.target, 777, tt.at); err != nil {
				t.Fatal(err)
			}
			got, err := consumePlannedStop(l, self, now)
			if got != tt.want {
				t.Fatalf("consumed %v (%v), want %v", got, err, tt.want)
			}
			_, statErr := os.Stat(l.PlannedStopMarker())
			if tt.want == (statErr == nil) {
				t.Fatalf("marker present=%v after consumed=%v", statErr == nil, got)
			}
			os.Remove(l.PlannedStopMarker())
		})
	}
}
