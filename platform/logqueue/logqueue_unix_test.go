//go:build unix

package logqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/fullpipe"
)

// TestWriterOnAStuckPipe writes far more than the queue holds into a pipe
// nobody reads (a terminal paused with Ctrl-S): no write blocks, the queue
// stays within its bound, and once the pipe is read again the log holds
// what was queued, in order, then one entry counting exactly what was lost.
func TestWriterOnAStuckPipe(t *testing.T) {
	const (
		entries = 200
		size    = 100
		max     = 1000
	)
	r, w := fullpipe.New(t)
	defer r.Close()
	defer w.Close()
	q := New(zapcore.AddSync(w), zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), max, time.Minute)
	for i := range entries {
		entry := fmt.Sprintf("%-*d\n", size-1, i)
		if n, err := q.Write([]byte(entry)); n != size || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	q.q.mu.Lock()
	if q.q.bytes > max {
		t.Errorf("the queue holds %d bytes, more than its %d", q.q.bytes, max)
	}
	q.q.mu.Unlock()

	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&out, r); copied <- err }()
	// A pipe cannot be fsynced (EINVAL): only giving up is wrong here.
	if err := q.Sync(); errors.Is(err, ErrStuck) {
		t.Fatalf("Sync once the pipe is read: %v", err)
	}
	w.Close()
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	// Each note follows the entries queued before what it counts, and
	// precedes every entry queued after: it names exactly the gap before
	// the next entry kept.
	next, noted, lost := 0, 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(strings.TrimLeft(out.String(), "#"), "\n"), "\n") {
		var note struct {
			Msg   string `json:"msg"`
			Lines int    `json:"lines"`
			Bytes int    `json:"bytes"`
		}
		if json.Unmarshal([]byte(l), &note) == nil && strings.HasPrefix(note.Msg, "lost ") {
			if note.Lines <= 0 || note.Bytes != note.Lines*size || !strings.HasPrefix(note.Msg, fmt.Sprintf("lost %d log lines", note.Lines)) {
				t.Errorf("note %+v: want the count of %d-byte entries", note, size)
			}
			noted += note.Lines
			lost += note.Lines
			continue
		}
		var i int
		if _, err := fmt.Sscan(l, &i); err != nil || len(l) != size-1 || i < next {
			t.Fatalf("entry %q where %d or later was due: entries must come whole and in order", l, next)
		}
		if i-next != noted {
			t.Errorf("entry %d follows entry %d with %d noted lost between", i, next-1, noted)
		}
		next, noted = i+1, 0
	}
	if entries-next != noted {
		t.Errorf("the last entry kept is %d of %d, and %d noted lost after it", next-1, entries, noted)
	}
	if lost == 0 {
		t.Errorf("nothing was lost: the queue held %d entries of %d bytes past its %d", entries, size, max)
	}
}

// TestSyncGivesUp syncs a Writer whose output never takes a write: Sync
// returns ErrStuck once its wait has passed, so that a program with a
// stuck log still exits.
func TestSyncGivesUp(t *testing.T) {
	r, w := fullpipe.New(t)
	defer r.Close()
	defer w.Close()
	const wait = 50 * time.Millisecond
	q := New(zapcore.AddSync(w), zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), 1<<10, wait)
	_, _ = q.Write([]byte("stuck\n"))
	begun := time.Now()
	err := q.Sync()
	if !errors.Is(err, ErrStuck) {
		t.Fatalf("Sync = %v, want ErrStuck", err)
	}
	if took := time.Since(begun); took < wait {
		t.Errorf("Sync gave up after %v, before its wait of %v", took, wait)
	}
}
