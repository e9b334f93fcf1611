//go:build unix

package lockstore

import (
	"os"
	"testing"
)

// linkReplacement is a symlink taking the judged file's name; read back
// through it, it gives its target's bytes.
var linkReplacement = &raceReplacement{"a symlink", func(t *testing.T, path string, l Layout) []byte {
	target := path + ".target"
	b := writeRecord(t, target, deadIdentity(t), l.Home)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return b
}, true}
