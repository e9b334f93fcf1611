//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLogLines(t *testing.T) {
	tests := []struct {
		data string
		want int
	}{
		{"", 0},
		{"\n", 1},
		{"a\nb\n", 2},
		{"a\nb", 2},
		{"\n\n\n", 3},
	}
	for _, tt := range tests {
		if got := logLines([]byte(tt.data)); got != tt.want {
			t.Errorf("logLines(%q) = %d, want %d", tt.data, got, tt.want)
		}
	}
}

// TestFloodTallyReadsAGrowingLog feeds a log in pieces that cut entries
// in two, as a supervisor's writes land between two polls: every entry
// is counted once, the failed transition wherever it falls, and the lines
// a report says were suppressed.
func TestFloodTallyReadsAGrowingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sup.log")
	pieces := []string{
		`{"level":"info","msg":"state","from":"stopped","to":"starting"}` + "\n" + `{"level":"info","msg":"gateway output","stream":"stdout","line":""}` + "\n" + `{"level":"info","msg":"gate`,
		`way output","stream":"stdout","line_escaped":"\"to\":\"failed\""}` + "\n",
		`{"level":"error","msg":"state","from":"starting","to":"failed"}` + "\n",
		`{"level":"info","msg":"gateway output","stream":"stderr","line":"late"}` + "\n" + `{"level":"warn","msg":"suppressed 7 lines, 70 bytes of gateway output","lines":7,"bytes":70}`,
		"\n",
	}
	want := []floodTally{
		{lines: 1},
		{lines: 2},
		{lines: 2, failed: true},
		{lines: 3, failed: true},
		{lines: 3, suppressed: 7, failed: true},
	}
	var tally floodTally
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, p := range pieces {
		if _, err := f.WriteString(p); err != nil {
			t.Fatal(err)
		}
		grew, err := tally.read(path)
		if err != nil || !grew {
			t.Fatalf("piece %d: grew %v, %v; want grown", i, grew, err)
		}
		w := want[i]
		if tally.lines != w.lines || tally.suppressed != w.suppressed || tally.failed != w.failed {
			t.Errorf("after piece %d: %d lines, %d suppressed, failed %v; want %d, %d, %v", i, tally.lines, tally.suppressed, tally.failed, w.lines, w.suppressed, w.failed)
		}
	}
	if grew, err := tally.read(path); grew || err != nil {
		t.Errorf("a read of nothing new: grew %v, %v; want neither", grew, err)
	}
}
