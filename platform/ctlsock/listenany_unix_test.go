//go:build unix

package ctlsock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// takenAddress returns an address in a directory another user made
// world-writable, where listen refuses to bind.
func takenAddress(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(shortTempDir(t), privateDirPrefix+"x")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "s.sock")
	return a
}

// checkFresh requires the fresh socket in a 0700 directory of ours under
// /tmp, removed with the listener (checked by the caller's Dial after Close
// and here by a cleanup).
func checkFresh(t *testing.T, addr string) {
	t.Helper()
	dir := filepath.Dir(addr)
	if !strings.HasPrefix(dir, freshDirBase+"/"+privateDirPrefix) {
		t.Errorf("fresh address %q is not in a private dir under %s", addr, freshDirBase)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("fresh dir %s: %v %v, want a 0700 directory", dir, fi.Mode(), err)
	}
	checkPrivate(t, addr)
	t.Cleanup(func() {
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("fresh dir %s left behind after Close: %v", dir, err)
		}
	})
}
