package safefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestReadTail(t *testing.T) {
	dir := testdir.New(t)
	for _, tt := range []struct {
		data  string
		limit int64
		want  string
	}{
		{"", 8, ""},
		{"short", 8, "short"},
		{"exactly8", 8, "exactly8"},
		{"0123456789abcdef", 4, "cdef"},
	} {
		path := filepath.Join(dir, "log")
		if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, _, err := ReadTail(path, tt.limit)
		if err != nil || string(got) != tt.want {
			t.Errorf("ReadTail(%q, %d) = %q, %v; want %q", tt.data, tt.limit, got, err, tt.want)
		}
	}
	if _, _, err := ReadTail(dir, 8); err == nil {
		t.Errorf("ReadTail of a directory: no error")
	}
}
