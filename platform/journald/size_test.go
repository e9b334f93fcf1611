package journald

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestJournalCoreSize measures what one line of gateway output costs over
// journald's native protocol: the value as a field of its own and again
// inside MESSAGE. Base85's alphabet holds < > &, which json.Marshal would
// spell as 6 bytes each.
func TestJournalCoreSize(t *testing.T) {
	const b85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
	value := strings.Repeat(b85, 100)
	var size int
	c := newCore(zapcore.InfoLevel, func(msg string, prio int, vars map[string]string) error {
		size = len(msg)
		for k, v := range vars {
			size += len(k) + len(v) + 2
		}
		return nil
	}, zapcore.NewNopCore(), 1<<20, time.Minute)
	zap.New(c).Info("gateway output", zap.String("stream", "stdout"), zap.String("line_base85", value))
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	ratio := float64(size) / float64(len(value))
	t.Logf("%d bytes of value cost %d bytes over the native protocol: %.2f per byte", len(value), size, ratio)
	// Once as a field, once in MESSAGE, plus the entry.
	if ratio > 2.1 {
		t.Errorf("%.2f journal bytes per byte of value: a value is escaped on its way into MESSAGE", ratio)
	}
}
