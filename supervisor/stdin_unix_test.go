//go:build unix

package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// Every gateway's stdin is the supervisor's one /dev/null: read at once
// to its end by the first gateway and by the one restarted after it,
// which a descriptor closed after the first start would fail. The
// gateway is a shell, not Go: a Go program's runtime opens /dev/null
// itself on a closed descriptor 0, and would hide exactly that.
func TestEveryGatewayReadsEOFOnStdin(t *testing.T) {
	file := filepath.Join(testdir.New(t), "reads")
	// wc counts what stdin held (0 bytes) or fails on a closed one; the
	// first gateway exits 75 (restart at once), the second 78 (give up).
	script := `wc -c >> "$1" || echo "stdin unreadable" >> "$1"; [ "$(wc -l < "$1")" -ge 2 ] && exit 78; exit 75`
	h := startHarnessWith(t, func(c *Config) {
		c.Command = []string{"/bin/sh", "-c", script, "sh", file}
	})
	st := h.waitState(Failed)
	if st.Restarts != 1 {
		t.Fatalf("restarts = %d, want 1 (exit 75, then 78): %s", st.Restarts, st.Reason)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "0\n0\n" {
		t.Fatalf("the gateways read %q from stdin; want 0 bytes, twice", b)
	}
}
