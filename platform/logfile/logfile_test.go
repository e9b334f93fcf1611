package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// clock steps a millisecond at each reading, so that every rotation has a
// name of its own.
func clock() func() time.Time {
	t := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// TestRotation writes lines past the size again and again: the file never
// grows past it, the newest backups are kept, no line is lost from what is
// kept, and a file an older supervisor left (lumberjack's names) is
// counted and pruned alike.
func TestRotation(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "hermes-supervisor.log")
	legacy := filepath.Join(dir, "hermes-supervisor-2020-01-01T00-00-00.000.log")
	if err := os.WriteFile(legacy, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.log"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, 100, 2, clock())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := strings.Repeat("x", 29) + "\n" // 30 bytes: 3 to a file
	for i := range 12 {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	got := names(t, dir)
	want := []string{"hermes-supervisor-2026-12-07T00-00-00.002.log", "hermes-supervisor-2026-12-07T00-00-00.003.log", "hermes-supervisor.log", "other.log"}
	if !slices.Equal(got, want) {
		t.Fatalf("the directory holds %q, want %q", got, want)
	}
	for _, n := range want[:3] {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(b) != strings.Repeat(line, 3) {
			t.Errorf("%s holds %d bytes (%v), want 3 whole lines", n, len(b), err)
		}
	}
}

// TestRefusesWhatIsNoRegularFile: a directory at the path is refused at
// Open, never written through.
func TestRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := testdir.New(t)
	if _, err := Open(dir, 100, 1, clock()); !errors.Is(err, safefs.ErrNotRegular) {
		t.Errorf("Open of a directory: %v, want ErrNotRegular", err)
	}
}
