package lockstore

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// fastPathsAsUnmarshal fails t unless stringOf and startTimeOf give, for
// every value of the record data, what json.Unmarshal gives them.
func fastPathsAsUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	membersAsUnmarshal(t, bytes.TrimFunc(bytes.TrimPrefix(data, bom), pyparse.IsSpace))
	fields, _, err := readJSONFile(data, false)
	if err != nil {
		return
	}
	for _, m := range fields {
		k, raw := m.name, m.raw
		var want string
		wantOK := json.Unmarshal(raw, &want) == nil
		if got, ok := stringOf(raw); got != want || ok != wantOK {
			t.Fatalf("stringOf(%s) of %q = %q %v; json.Unmarshal gives %q %v", raw, k, got, ok, want, wantOK)
		}
		// startTimeOf's reading before the fast path, as the oracle.
		var f float64
		wantBogus := json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<62
		if len(raw) == 0 || string(raw) == "null" {
			wantBogus = false
		}
		got, bogus := startTimeOf(raw)
		switch {
		case bogus != wantBogus:
			t.Fatalf("startTimeOf(%s): bogus %v, want %v", raw, bogus, wantBogus)
		case !bogus && got != nil && *got != int64(f):
			t.Fatalf("startTimeOf(%s) = %d, want %d", raw, *got, int64(f))
		}
	}
}

// membersAsUnmarshal fails t unless objectMembers and arrayItems cut
// text, as readJSONFile gives it to them, as json.Unmarshal does, and
// leave to Unmarshal no object but one with an escaped key.
func membersAsUnmarshal(t *testing.T, text []byte) {
	t.Helper()
	if !utf8.Valid(text) {
		return // readJSONFile refuses it first
	}
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(text, &want)
	cut, ok := objectMembers(text)
	got := map[string]json.RawMessage{}
	for _, m := range cut {
		got[m.name] = m.raw // the last of equal names wins, as in a map
		if raw, _ := cut.get(m.name); !bytes.Equal(raw, want[m.name]) && wantErr == nil {
			t.Fatalf("objectMembers(%q).get(%q) = %s; json.Unmarshal gives %s", text, m.name, raw, want[m.name])
		}
	}
	switch {
	case ok && (wantErr != nil || !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })):
		t.Fatalf("objectMembers(%q) = %q; json.Unmarshal gives %q, %v", text, got, want, wantErr)
	case !ok && wantErr == nil && want != nil && bytes.IndexByte(text, '\\') < 0:
		t.Fatalf("objectMembers(%q) left to Unmarshal an object with no escape", text)
	}
	for _, raw := range want {
		var items []json.RawMessage
		err := json.Unmarshal(raw, &items)
		got, ok := arrayItems(raw)
		if ok && (err != nil || !slices.EqualFunc(got, items, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })) {
			t.Fatalf("arrayItems(%s) = %q; json.Unmarshal gives %q, %v", raw, got, items, err)
		}
		// What arrayItems refuses, Unmarshal finds no items in either:
		// the record reader asks nothing more of it.
		if !ok && err == nil && len(items) > 0 {
			t.Fatalf("arrayItems(%s) refused a value json.Unmarshal reads as the items %q", raw, items)
		}
	}
}

// TestFastPathsAsUnmarshal: the fast paths of the record reader on values
// at their edges: escapes, non-strings, long and signed integers.
func TestFastPathsAsUnmarshal(t *testing.T) {
	for _, doc := range []string{
		`{"a": "plain", "b": "", "c": "tab\tand \"quote\"", "d": "\u00e9\ud83d\ude00", "e": "é😀"}`,
		`{"a": null, "b": 7, "c": true, "d": [], "e": {}, "f": "\\"}`,
		`{"s": 0, "t": -0, "u": 999999999999999, "v": -999999999999999, "w": 1234567890123456, "x": 12345678901234567890, "y": 9007199254740993}`,
		`{"s": 1e3, "t": 1.5, "u": 1.0, "v": -1E2, "w": 4611686018427387904, "x": "881234"}`,
		// Members cut by brackets and quotes: brackets and quotes inside
		// strings, nesting, white space everywhere, the last of equal keys.
		" \t{ \"argv\" :\n[ \"a\\\"]b\" , {\"x\": \"}\"} ,[1,[2, {}]],\"\\\\\"] ,\"pid\":12\r}\n",
		`{"k": 1, "k": [2], "n": -1.5e-3, "z": false, "e": [ ], "o": {"a": {"b": [{}]}}}`,
		`{"\u0070id": 5, "pid": 6}`,
		`{}`,
	} {
		t.Run(doc, func(t *testing.T) {
			if _, _, err := readJSONFile([]byte(doc), false); err != nil {
				t.Fatalf("not a record: %v", err)
			}
			fastPathsAsUnmarshal(t, []byte(doc))
		})
	}
}

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
		fields, _, err := readJSONFile([]byte(tt.in), false)
		if err != nil {
			t.Fatal(err)
		}
		pid, kind := pidFromRecord(fields, "pid")
		if kind != tt.kind || (kind == pidOK && pid != tt.pid) {
			t.Errorf("%s: pid %d (%d), Python gives %d (%d)", tt.in, pid, kind, tt.pid, tt.kind)
		}
	}
	// {"pid": NaN}: Go's JSON has no NaN; Python's int(nan) is a
	// ValueError, so None.
	if _, kind := pidFromRecord(members{{"pid", json.RawMessage("NaN")}}, "pid"); kind != pidNone {
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
