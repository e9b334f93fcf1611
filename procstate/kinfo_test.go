package procstate

import "testing"

// The expected values were computed by CPython 3 as
// int(round((sec + usec/1000000.0) * 100)), the expression psutil and
// Hermes evaluate on macOS; the .5 rows are exact ties in the double,
// which Python rounds to even.
func TestPythonCentiseconds(t *testing.T) {
	tests := []struct {
		sec, usec, want int64
	}{
		{0, 5000, 0},                       // 0.5: tie, to even
		{0, 15000, 2},                      // 1.5: tie, to even
		{0, 25000, 2},                      // 2.5: tie, to even
		{1, 5000, 100},                     // 100.49999999999999: no tie in the double
		{1763884800, 5000, 176388480000},   // tie, to even (down)
		{1763884800, 15000, 176388480002},  // tie, to even (up)
		{1763884800, 25000, 176388480002},  // tie, to even (down)
		{1763884800, 125000, 176388480012}, // tie, to even (down)
		{1700000000, 35000, 170000000004},  // tie, to even (up)
		{2000000000, 5000, 200000000000},   // tie, to even (down)
		{1763884800, 999995, 176388480100}, // rounds into the next second
		{1763884800, 999999, 176388480100}, //
		{1763884801, 4999, 176388480100},   // just below half
		{1763884801, 5001, 176388480101},   // just above half
		{1763884800, 0, 176388480000},      // whole second
		{1763884800, 123456, 176388480012}, // ordinary
		{1763884800, 126000, 176388480013}, // 12.6 centiseconds
		{946684800, 994999, 94668480099},   // 2000-01-01, below half
		{946684800, 995001, 94668480100},   // and above
	}
	for _, tt := range tests {
		if got := pythonCentiseconds(tt.sec, tt.usec); got != tt.want {
			t.Errorf("pythonCentiseconds(%d, %d) = %d, want %d", tt.sec, tt.usec, got, tt.want)
		}
	}
}

func TestKinfoLive(t *testing.T) {
	tests := []struct {
		name            string
		stat            int8
		zombie, stopped bool
	}{
		{"being created", darwinSIDL, false, false},
		{"running", darwinSRUN, false, false},
		{"sleeping", darwinSSLP, false, false},
		{"stopped", darwinSSTOP, false, true},
		{"zombie", darwinSZOMB, true, false},
		{"unknown state", 9, false, false},
	}
	for _, tt := range tests {
		st := kinfoLive(tt.stat, 501, 1763884800, 15000)
		if st.zombie != tt.zombie || st.stopped != tt.stopped {
			t.Errorf("%s: zombie %v stopped %v, want %v %v", tt.name, st.zombie, st.stopped, tt.zombie, tt.stopped)
		}
		if st.uid == nil || *st.uid != 501 {
			t.Errorf("%s: uid %v, want 501", tt.name, st.uid)
		}
		if st.start == nil || *st.start != 176388480002 {
			t.Errorf("%s: start %v, want 176388480002", tt.name, st.start)
		}
	}
}

func TestOwnerConflict(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	tests := []struct {
		name         string
		writer, live *uint32
		want         bool
	}{
		{"same user", u(501), u(501), false},
		{"root daemon holds a user's pid", u(501), u(0), true},
		{"user process holds root's pid", u(0), u(501), true},
		{"owner unknown (Windows, gateway.lock)", nil, u(0), false},
		{"volume that ignores ownership (_unknown)", u(99), u(0), false},
		{"process uid unknown (Linux)", u(501), nil, false},
		{"both unknown", nil, nil, false},
	}
	for _, tt := range tests {
		if got := OwnerConflict(tt.writer, tt.live); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
