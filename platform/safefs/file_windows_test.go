package safefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"golang.org/x/sys/windows"
)

// Hermes replaces gateway_state.json with os.replace (MoveFileEx) and
// unlinks its pid file: a reader that does not share delete makes both
// fail while it reads. ReadRegular's open shares it.
func TestReadSharesDelete(t *testing.T) {
	dir := testdir.New(t)
	path, next := filepath.Join(dir, "gateway_state.json"), filepath.Join(dir, "next.tmp")
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(`{"gateway_state":"running"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path)
	// What Go's os.Open shares, to see that this Windows enforces it.
	plain, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	blocked := os.Remove(path) != nil
	plain.Close()
	if !blocked {
		t.Fatal("a file opened without FILE_SHARE_DELETE was deleted: this Windows enforces no sharing, the test proves nothing")
	}
	f, err := openNoReparse(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Errorf("deleting a file our reader holds: %v", err)
	}
	f.Close()

	write(path)
	write(next)
	if f, err = openNoReparse(path, windows.GENERIC_READ, windows.OPEN_EXISTING); err != nil {
		t.Fatal(err)
	}
	// Replacing an open file takes POSIX rename semantics as well (NTFS on
	// Windows 10 1809 and later); Wine's MoveFileEx refuses it whatever
	// the share mode, so only a real Windows shows this one.
	if err := os.Rename(next, path); err != nil {
		t.Logf("replacing a file our reader holds: %v (only real Windows can confirm the replace)", err)
	}
	f.Close()
	if _, _, err := ReadRegular(path, 1<<10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRegular(dir, 1<<10); err == nil {
		t.Error("ReadRegular read a directory")
	}
}
