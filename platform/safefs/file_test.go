package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestReadRegularAndStamp(t *testing.T) {
	dir := testdir.New(t)
	p := filepath.Join(dir, "gateway.pid")
	if err := os.WriteFile(p, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, st, err := ReadRegular(p, 100)
	if err != nil || string(b) != "4242\n" {
		t.Fatalf("read %q %v", b, err)
	}
	if b, _, err := ReadRegular(p, 3); err != nil || string(b) != "424" {
		t.Fatalf("bounded read %q %v", b, err)
	}
	again, err := Stamp(p)
	if err != nil || !again.Same(st) {
		t.Fatalf("unchanged file: stamp %v %v", again, err)
	}
	// Moved: the same file under another name keeps its stamp.
	moved := p + ".stale"
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	if m, err := Stamp(moved); err != nil || !m.Same(st) {
		t.Fatalf("renamed file: stamp %v %v", m, err)
	}
	// Replaced by a new file with the same content and time: another file.
	if err := os.WriteFile(p, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(p, st.ModTime(), st.ModTime())
	if r, err := Stamp(p); err != nil || r.Same(st) {
		t.Fatalf("replaced file has the old stamp: %v", err)
	}
	if _, _, err := ReadRegular(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
	if _, _, err := ReadRegular(filepath.Join(dir, "missing"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
