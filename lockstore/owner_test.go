package lockstore

import (
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The macOS report this project began from: a record with a null start
// time names a pid a root daemon now holds, whose command line darwin will
// not show. The uid owning the file settles it; without an owner or a uid
// the old rules stand.
func TestWriterUIDProvesReuse(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	gateway := `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": null}`
	tests := []struct {
		name       string
		writer     *uint32
		liveUID    *uint32
		runtime    procstate.Verdict
		scopedKept bool
	}{
		{"root daemon holds the user's pid", u(501), u(0), procstate.Reused, false},
		{"same user", u(501), u(501), procstate.Alive, true},
		{"file owner unknown", nil, u(0), procstate.Alive, true},
		{"process uid unknown", u(501), nil, procstate.Alive, true},
	}
	for _, tt := range tests {
		h, err := parseHermesRecord([]byte(gateway), true)
		if err != nil {
			t.Fatal(err)
		}
		h.writer = tt.writer
		// argv unreadable, start time unknown
		r := rules{home: "/Users/ann/.hermes", now: time.Now(), procs: map[int]procFacts{4242: {live: procstate.Live{PID: 4242, UID: tt.liveUID}}}}
		if got := r.runtimeRecord(h); got.verdict != tt.runtime || got.keep != (tt.runtime == procstate.Alive) {
			t.Errorf("%s: runtime record %v (keep %v: %s), want %v", tt.name, got.verdict, got.keep, got.reason, tt.runtime)
		}
		if got := r.scopedRecord(h); got.keep != tt.scopedKept {
			t.Errorf("%s: scoped lock kept %v (%s), want %v", tt.name, got.keep, got.reason, tt.scopedKept)
		}
	}
}
