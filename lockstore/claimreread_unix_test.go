//go:build unix

package lockstore

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSweepKeepsAClaimItCannotReadBack: a stale lock is rewritten in
// place (Hermes' "own pid: rewrite") after it was judged and before it
// is moved, so the file moved into the bin is no longer the one judged
// and is read there again. What it then says may not be a record the
// re-read can parse: a live gateway's claim beyond MaxRecordSize (a long
// command line), or a claim caught mid-write (truncated, half written).
// None of those proves the file stale, so it goes back under its name.
func TestSweepKeepsAClaimItCannotReadBack(t *testing.T) {
	live := startProc(t, "block", true)
	tests := []struct {
		name string
		// claim is what the file says once rewritten.
		claim func(t *testing.T, home string) []byte
	}{
		{"a live gateway's claim beyond MaxRecordSize", func(t *testing.T, home string) []byte {
			rec := NewRecord(live, home)
			rec.Scope = "telegram-bot-token"
			rec.Metadata = json.RawMessage(`{"pad":"` + strings.Repeat("x", 2*MaxRecordSize) + `"}`)
			b, err := rec.Encode()
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"a claim truncated before it is written", func(*testing.T, string) []byte { return nil }},
		{"a claim half written", func(t *testing.T, home string) []byte {
			b := writeRecord(t, filepath.Join(testdir.New(t), "claim"), live, home)
			return b[:len(b)/2]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newStore(t)
			path := l.ScopedLock("telegram-bot-token", "a")
			writeRecord(t, path, deadIdentity(t), l.Home)
			claim := tt.claim(t, l.Home)
			s.beforeRemove = func(p string) {
				if p != path {
					return
				}
				// In place: the inode stays the one judged, its bytes do not.
				if err := os.WriteFile(path, claim, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			es, _ := s.Sweep(context.Background(), false)
			got := byPath(es)[path]
			if got.Action == ActionSwept || got.Action == ActionQuarantined {
				t.Errorf("the rewritten lock: %s (%s), want it kept", got.Action, got.Reason)
			}
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, claim) {
				t.Fatalf("the lock holds %d bytes (%v); want the claim's %d back under its name", len(b), err, len(claim))
			}
			if des, err := os.ReadDir(l.SweepBin()); err != nil || len(des) != 0 {
				t.Fatalf("the bin holds %v (%v); want it empty", des, err)
			}
		})
	}
}
