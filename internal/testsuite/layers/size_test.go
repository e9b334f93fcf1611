package layers

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// maxLines bounds a non-test Go file (issue 24): a file that grows past it
// holds more than one concern, and is split by concern, never trimmed.
const maxLines = 500

// TestNoFileOverMaxLines keeps every non-test Go file of the module within
// maxLines lines.
func TestNoFileOverMaxLines(t *testing.T) {
	r := root(t)
	checked := 0
	for _, dir := range packageDirs(t) {
		for _, p := range sourceFiles(t, filepath.Join(r, dir)) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if n := bytes.Count(data, []byte("\n")); n > maxLines {
				t.Errorf("%s/%s has %d lines, over %d: split it by concern", dir, filepath.Base(p), n, maxLines)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Go files found under the module root")
	}
}
