package journald

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hermes-agent/hermes-supervisor/platform/logqueue"
)

// A journald that takes no datagrams (wedged, its socket's queue full)
// blocks each send. The supervisor's state machine logs through this core,
// so a send must never block the caller: entries wait in a bounded queue,
// what does not fit is counted, and journald is told how many once it
// takes entries again; Sync gives up after its wait.
func TestJournalCoreWithJournaldStuck(t *testing.T) {
	const max = 4 << 10
	unstick := make(chan struct{})
	var mu sync.Mutex
	var sent []string
	core := newCore(zapcore.InfoLevel, func(msg string, _ int, vars map[string]string) error {
		<-unstick
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, msg)
		return nil
	}, zapcore.NewNopCore(), max, 100*time.Millisecond)
	log := zap.New(core)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			log.Info(fmt.Sprint("line ", i), zap.String("pad", strings.Repeat("x", 100)))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		close(unstick)
		t.Fatal("logging blocked on a journald that takes nothing")
	}
	if err := core.Sync(); !errors.Is(err, logqueue.ErrStuck) {
		t.Errorf("Sync with journald stuck = %v, want ErrStuck", err)
	}

	close(unstick)
	if err := core.Sync(); err != nil {
		t.Fatalf("Sync once journald takes entries: %v", err)
	}
	log.Info("after")
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var kept, lost int
	for _, m := range sent {
		var n, b int
		if strings.HasPrefix(m, "line ") {
			kept++
		} else if _, err := fmt.Sscanf(m, "lost %d log lines, %d bytes", &n, &b); err == nil {
			lost += n
		}
	}
	if kept+lost != 1000 || lost == 0 || sent[len(sent)-1] != "after" {
		t.Fatalf("journald got %d lines and was told of %d lost (want 1000 in all, some lost), last %q", kept, lost, sent[len(sent)-1])
	}
}
