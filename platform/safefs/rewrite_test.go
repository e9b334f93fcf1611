package safefs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestRewrite leaves exactly the new record, whatever the old one's
// length, in the file it was given, without a new file.
func TestRewrite(t *testing.T) {
	rec := []byte(`{"pid": 4242, "kind": "hermes-gateway"}` + "\n")
	tests := []struct {
		name string
		old  string
	}{
		{"empty", ""},
		{"shorter", `{"pid": 1}`},
		{"same length", strings.Repeat("x", len(rec))},
		{"longer", `{"pid": 123456, "argv": ["hermes", "gateway", "run", "--replace"], "home": "/home/someone/.hermes"}`},
		{"far longer than the padding", strings.Repeat("y", maxPad+len(rec)+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(testdir.New(t), "gateway.lock")
			if err := os.WriteFile(p, []byte(tt.old), 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := Rewrite(f, rec); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, rec) {
				t.Fatalf("file holds %q, want %q", got, rec)
			}
			after, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(before, after) {
				t.Fatal("the record was written to a new file: a lock held on the old one no longer guards it")
			}
		})
	}
}

// TestOverwrite is what a reader between Rewrite's write and its cut
// reads: one JSON value, the record, whatever the old file's length, and
// never more than maxPad of padding, however large a planted file is.
func TestOverwrite(t *testing.T) {
	rec := []byte(`{"pid": 4242}` + "\n")
	for _, old := range []int64{0, 3, int64(len(rec)), int64(len(rec)) + 1, 4096, int64(len(rec)) + maxPad, int64(len(rec)) + maxPad + 1, 1 << 40} {
		got := overwrite(rec, old)
		var v map[string]int
		if err := json.Unmarshal(got, &v); err != nil || v["pid"] != 4242 {
			t.Fatalf("over %d old bytes a reader reads %q: %v %v", old, got, v, err)
		}
		if !bytes.HasPrefix(got, rec) || strings.TrimRight(string(got[len(rec):]), " ") != "" {
			t.Fatalf("over %d old bytes: %q is not the record and spaces", old, got)
		}
		want := int64(len(rec))
		if old > want && old <= want+maxPad {
			want = old // covers every old byte
		}
		if int64(len(got)) != want {
			t.Fatalf("over %d old bytes it writes %d bytes, want %d", old, len(got), want)
		}
	}
}
