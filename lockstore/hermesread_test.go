package lockstore

import (
	"encoding/json"
	"testing"
)

// TestPIDFromRecordIsPythons: _pid_from_record's int(record["pid"]) on the
// record json.loads gives. The table was produced by Python 3.11.7 with
// json.loads(s) and a copy of _pid_from_record that also reports the
// OverflowError it lets through (pidRaises). Values beyond a process id's
// range read as -1 here, which no process has either.
func TestPIDFromRecordIsPythons(t *testing.T) {
	for _, tt := range []struct {
		in   string
		kind pidValue
		pid  int
	}{
		{`{"pid": 7}`, pidOK, 7},
		{`{"pid": 0}`, pidOK, 0},
		{`{"pid": -3}`, pidOK, -3},
		{`{"pid": true}`, pidOK, 1},
		{`{"pid": false}`, pidOK, 0},
		{`{"pid": 7.9}`, pidOK, 7},
		{`{"pid": -7.9}`, pidOK, -7},
		{`{"pid": 1e400}`, pidRaises, 0},
		{`{"pid": -1e400}`, pidRaises, 0},
		{`{"pid": " 12 "}`, pidOK, 12},
		{`{"pid": "1_2"}`, pidOK, 12},
		{`{"pid": "+4"}`, pidOK, 4},
		{`{"pid": "\u0663"}`, pidOK, 3},
		{`{"pid": "4.0"}`, pidNone, 0},
		{`{"pid": "0x4"}`, pidNone, 0},
		{`{"pid": null}`, pidNone, 0},
		{`{"pid": [1]}`, pidNone, 0},
		{`{"pid": {}}`, pidNone, 0},
		{`{}`, pidNone, 0},
		{`{"pid": 99999999999}`, pidOK, -1}, // Python: 99999999999
		{`{"pid": 2e3}`, pidOK, 2000},
	} {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tt.in), &fields); err != nil {
			t.Fatal(err)
		}
		pid, kind := pidFromRecord(fields, "pid")
		if kind != tt.kind || (kind == pidOK && pid != tt.pid) {
			t.Errorf("%s: pid %d (%d), Python gives %d (%d)", tt.in, pid, kind, tt.pid, tt.kind)
		}
	}
	// {"pid": NaN}: Go's JSON has no NaN; Python's int(nan) is a
	// ValueError, so None.
	if _, kind := pidFromRecord(map[string]json.RawMessage{"pid": json.RawMessage("NaN")}, "pid"); kind != pidNone {
		t.Errorf("NaN: %d, Python gives None", kind)
	}
}

// TestBarePIDIsPythons: a pid file's text as _read_json_file(...,
// bare_pid_ok=True) reads it (json.loads, else int() of the stripped
// text). The table was produced by Python 3.11.7 with that function's
// body; null: no record.
func TestBarePIDIsPythons(t *testing.T) {
	for _, tt := range []struct {
		in  string
		pid any // int, bool, or nil for no record
	}{
		{"42", 42}, {"+42", 42}, {"1_000", 1000}, {"\u0664\u0662", 42}, {"42.0", nil}, {"true", true},
		{"false", false}, {"-3", -3}, {"0x2a", nil}, {"\u001c42\u001f", 42}, {"42 43", nil}, {"[42]", nil}, {`"42"`, nil},
	} {
		fields, legacy, err := readJSONFile([]byte(tt.in), true)
		if tt.pid == nil {
			if err == nil {
				t.Errorf("%q: read %v, Python reads no record", tt.in, fields)
			}
			continue
		}
		if err != nil || !legacy {
			t.Errorf("%q: %v (legacy %v), Python reads pid %v", tt.in, err, legacy, tt.pid)
			continue
		}
		want := map[bool]int{true: 1, false: 0}[tt.pid == true]
		if n, ok := tt.pid.(int); ok {
			want = n
		}
		if pid, kind := pidFromRecord(fields, "pid"); kind != pidOK || pid != want {
			t.Errorf("%q: pid %d (%d), Python gives %v", tt.in, pid, kind, tt.pid)
		}
	}
}
