package supervisor

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

func TestParseSupervisorTag(t *testing.T) {
	start := int64(12345)
	tests := []struct {
		in     string
		want   int
		wantOK bool
	}{
		{"4242:12345", 4242, true},
		{supervisorTag(procstate.Identity{PID: 7, StartTime: &start}), 7, true},
		{supervisorTag(procstate.Identity{PID: 7}), 0, false}, // start time unknown: proves nothing
		{"4242", 0, false},
		{"", 0, false},
		{":12345", 0, false},
		{"-3:12345", 0, false},
		{"0:12345", 0, false},
		{"4242:12x", 0, false},
		{"4242:12345:9", 0, false},
	}
	for _, tt := range tests {
		id, ok := parseSupervisorTag(tt.in)
		if ok != tt.wantOK || (ok && id.PID != tt.want) {
			t.Errorf("parseSupervisorTag(%q) = %+v, %v; want pid %d, %v", tt.in, id, ok, tt.want, tt.wantOK)
		}
	}
	if id, _ := parseSupervisorTag("4242:12345"); id.StartTime == nil || *id.StartTime != start {
		t.Errorf("start time lost: %+v", id)
	}
}
