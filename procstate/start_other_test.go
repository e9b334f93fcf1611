//go:build !linux

package procstate

import (
	"testing"
	"time"
)

// Off Linux, Hermes records round(create_time*100): ±1 centisecond is the
// same start, and a value that cannot be such a time is unknown.
func TestCompareStartCentiseconds(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	live := now.Add(-time.Hour).UnixMilli() / 10
	l := Live{StartTime: &live}
	tests := []struct {
		name            string
		recorded        int64
		equal, conflict bool
	}{
		{"same", live, true, false},
		{"one centisecond off", live + 1, true, false},
		{"two off", live - 2, false, true},
		{"an hour off", live - 360000, false, true},
		{"negative", -5, false, false},
		{"before 2000", 12345, false, false},
		{"a Python string hash", 8_000_000_000_000_000_000, false, false},
		{"two days ahead", now.Add(48*time.Hour).UnixMilli() / 10, false, false},
	}
	for _, tt := range tests {
		if e, c := StartTimesEqual(&tt.recorded, l, now), StartTimesConflict(&tt.recorded, l, now); e != tt.equal || c != tt.conflict {
			t.Errorf("%s: equal %v conflict %v, want %v %v", tt.name, e, c, tt.equal, tt.conflict)
		}
	}
	if StartTimesConflict(nil, l, now) || StartTimesEqual(nil, l, now) {
		t.Error("a null start time is unknown")
	}
}
