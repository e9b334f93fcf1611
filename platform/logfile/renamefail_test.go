package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestRotationRefusedLosesNothing makes every rotation fail at its rename
// (a directory sits at the backup's name; a log directory the user made
// read-only, or a log file made append-only with chattr +a, refuse it the
// same way) while the log itself can still be appended to. Each line that
// found the file full used to be dropped, and with it every later line,
// for good: the file stayed full. The lines must all be in the file, grown
// past its size, and each write must say that the rotation failed.
func TestRotationRefusedLosesNothing(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "hermes-supervisor.log")
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	if err := os.Mkdir(filepath.Join(dir, "hermes-supervisor-"+at.Format(backupTime)+".log"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, 100, 2, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := strings.Repeat("z", 29) + "\n" // 30 bytes: the fourth finds the file full
	for i := range 10 {
		n, err := l.Write([]byte(line))
		if n != len(line) {
			t.Fatalf("write %d: wrote %d of %d bytes: %v", i, n, len(line), err)
		}
		if full := i >= 3; full != (err != nil) {
			t.Errorf("write %d (file full: %v): error %v", i, full, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != strings.Repeat(line, 10) {
		t.Errorf("the log holds %d bytes (%v), want the 10 lines written", len(b), err)
	}
}
