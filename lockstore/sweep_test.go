package lockstore

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestSweepLeavesAReplacedFile replaces a stale lock, between judging and
// acting, by another file of the same name and the same bytes: the sweep
// judged the old one, so it must leave the new one alone and say so.
func TestSweepLeavesAReplacedFile(t *testing.T) {
	s, l := newStore(t)
	path := l.ScopedLock("telegram-bot-token", "a")
	data := writeRecord(t, path, deadIdentity(t), l.Home)
	s.beforeRemove = func(p string) {
		if p != path {
			return
		}
		tmp := p + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := byPath(entries)[path]
	if !ok || got.Action != ActionKeep || !strings.Contains(got.Reason, "replaced") {
		t.Fatalf("entry %+v, want action keep with a reason naming the replacement", got)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the replacement = %q, %v; want it intact", b, err)
	}
	if _, err := os.Lstat(path + ".stale"); !os.IsNotExist(err) {
		t.Fatalf(".stale left behind: %v", err)
	}
}
