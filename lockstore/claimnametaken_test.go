package lockstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSweepKeepsAClaimWhoseNameWasTaken: a stale file is claimed in place
// by a live gateway after it was judged, and moved aside; while it is
// aside, another file takes its name. The claim cannot have its name back,
// and must not be lost for it: it is kept beside it, as <name>.replaced,
// which no sweep judges or removes, and the entry says where. Until
// 2026-12-07 the put-back's link failed quietly and the claim was deleted.
func TestSweepKeepsAClaimWhoseNameWasTaken(t *testing.T) {
	live := startProc(t, "block", true)
	for _, where := range judgedInodeWhere {
		t.Run(where.name, func(t *testing.T) {
			s, l := newStore(t)
			path := where.path(l)
			writeRecord(t, path, deadIdentity(t), l.Home)
			claim := writeRecord(t, filepath.Join(testdir.New(t), "claim"), live, l.Home)
			newer := []byte("a newer file under the name\n")
			s.beforeRemove = func(p string) {
				if p == path {
					// In place: the inode stays the one judged.
					if err := os.WriteFile(path, claim, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.afterMove = func(p string) {
				if p == path {
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					if _, err := f.Write(newer); err != nil {
						t.Fatal(err)
					}
				}
			}
			es, _ := s.Sweep(context.Background(), false)
			got := byPath(es)[path]
			if got.Action != ActionKeep || !strings.Contains(got.Reason, "claimed") || !strings.Contains(got.Reason, filepath.Base(path)+replacedSuffix) {
				t.Errorf("the claim: %s (%s); want kept, and where", got.Action, got.Reason)
			}
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, newer) {
				t.Errorf("the name holds %q, %v; want the newer file left alone", b, err)
			}
			if b, err := os.ReadFile(path + replacedSuffix); err != nil || !bytes.Equal(b, claim) {
				t.Errorf("%s holds %q, %v; want the claim", filepath.Base(path)+replacedSuffix, b, err)
			}
		})
	}
}
