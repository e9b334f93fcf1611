package pyparse

import "testing"

// TestFromISOFormat: the table was produced by Python 3.11.7 with
// datetime.fromisoformat(s) (its C implementation): ok is false where it
// raises ValueError, aware where it has an offset, and us is
// round(d.timestamp()*1e6). Strings without an offset are stale to
// Hermes either way, so only their awareness is checked; strings Python
// rejects but this lenient reading accepts are in the second table.
func TestFromISOFormat(t *testing.T) {
	for _, tt := range []struct {
		in        string
		ok, aware bool
		us        int64
	}{
		{"2026-09-01T10:00:00+00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00Z", true, true, 1788256800000000},
		{"2026-09-01 10:00:00+0000", true, true, 1788256800000000},
		{"2026-09-01T10:00:00+00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00+00:00:00", true, true, 1788256800000000},
		{"20260901T100000+0000", true, true, 1788256800000000},
		{"2026-09-01T10:00:00.123456+00:00", true, true, 1788256800123456},
		{"2026-09-01T10:00:00,5+01:30", true, true, 1788251400500000},
		{"2026-09-01T10:00:00.1234567+00:00", true, true, 1788256800123456},
		{"2026-09-01T10:00", true, false, 0},
		{"2026-09-01", true, false, 0},
		{"2026-09-01T10:00:00", true, false, 0},
		{"2026-W35-2T10:00:00+00:00", true, true, 1787652000000000},
		{"2026W352T100000Z", true, true, 1787652000000000},
		{"2026-09-01x10:00:00+00:00", true, true, 1788256800000000},
		{"2026-09-01\u00e910:00:00+00:00", true, true, 1788256800000000},
		{"2026-09-01T10+02", true, true, 1788249600000000},
		{"2026-09-01T1000-0530", true, true, 1788276600000000},
		{"2026-09-01T10:00:00+0", false, false, 0},
		{"2026-09-01T10:00:00+000", false, false, 0},
		{"2026-02-30T10:00:00+00:00", false, false, 0},
		{"2026-09-01T10:00:00Z+01", false, false, 0},
		{"2026-9-01T10:00:00+00:00", false, false, 0},
		{"2026-09-01T10:00:00.+00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00+01:00:30.5", true, true, 1788253169500000},
		{"\uff12\uff10\uff12\uff16-09-01T10:00:00+00:00", false, false, 0},
		{"2026-09-01T10:00:00 +00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:60+00:00", false, false, 0},
		{"2026-W53-1T00:00Z", true, true, 1798416000000000},
		{"2026-W01-1T00:00Z", true, true, 1766966400000000},
		{"2026-09-01T10:00:00-00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00.12Z", true, true, 1788256800120000},
		{"+2026-09-01T10:00Z", false, false, 0},
		{"2026-09-01T10:00:00x+00:00", true, true, 1788256800000000},
		{"2026-09-01T10 +00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00:00+00:00", true, true, 1788256800000000},
		{"2026-09-01T10:00:00+0100.5", true, true, 1788253199500000},
		{"2026-09-01T10:00:00+00:00x", false, false, 0},
	} {
		got, aware, err := FromISOFormat(tt.in)
		switch {
		case tt.ok && tt.aware && (err != nil || !aware || got.UnixMicro() != tt.us):
			t.Errorf("%q: %v aware=%v %v; Python gives %d", tt.in, got, aware, err, tt.us)
		case tt.ok && !tt.aware && aware:
			t.Errorf("%q: aware; Python reads it naive", tt.in)
		case !tt.ok && err == nil && aware:
			t.Errorf("%q: read as %v; Python raises", tt.in, got)
		}
	}
	// Python 3.14 (current Hermes) reads the end of a day, 24:00 with
	// nothing after the hour but zeros, as the next day's midnight; 3.11
	// raises. As CPython's own tests of it (gh-102450): a non-zero minute,
	// second or microsecond raises, the date is checked before it rolls
	// over, and 9999-12-31 has no next day. Each us is what 3.11 gives
	// for the next day's midnight written out.
	for _, tt := range []struct {
		in string
		ok bool
		us int64
	}{
		{"2026-09-01T24:00:00+00:00", true, 1788307200000000},
		{"2026-09-01T24:00Z", true, 1788307200000000},
		{"2026-09-01T24+00:00", true, 1788307200000000},
		{"2026-09-01 24:00:00.000000+02:00", true, 1788300000000000},
		{"2026-12-31T24:00:00Z", true, 1798761600000000},
		{"2028-02-28T24:00Z", true, 1835395200000000},
		{"2026-09-01T24:00:01+00:00", false, 0},
		{"2026-09-01T24:01+00:00", false, 0},
		{"2026-09-01T24:00:00.000001+00:00", false, 0},
		{"2026-09-31T24:00Z", false, 0},
		{"2026-13-01T24:00Z", false, 0},
		{"9999-12-31T24:00Z", false, 0},
		{"2026-09-01T25:00Z", false, 0},
	} {
		got, aware, err := FromISOFormat(tt.in)
		switch {
		case tt.ok && (err != nil || !aware || got.UnixMicro() != tt.us):
			t.Errorf("%q: %v aware=%v %v; Python 3.14 gives %d", tt.in, got, aware, err, tt.us)
		case !tt.ok && err == nil:
			t.Errorf("%q: read as %v; Python 3.14 raises", tt.in, got)
		}
	}
	// Rejected by Python (3.11.7 and 3.13.0), accepted here by the
	// lenient reading of stray characters before the offset (isoTime): a
	// fresh marker must never be read as stale; the reverse only keeps a
	// marker longer.
	for _, in := range []string{"2026-09-01T10:00:00.5 +00:00", "2026-09-01T10:00:00  +00:00"} {
		if _, aware, err := FromISOFormat(in); err != nil || !aware {
			t.Errorf("%q: %v (aware %v); the lenient reading accepts it", in, err, aware)
		}
	}
}
