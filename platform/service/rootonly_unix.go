//go:build unix

package service

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// rootOnly reports, for a caller running as root, whether only root can
// change what path names: links resolved, its directory (or path itself,
// a directory) must pass safefs.OpenDir, the walk every home passes (each
// component root's, none writable by other users unless sticky, as /tmp
// is), and a file must be root's and writable by no one else.
func rootOnly(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	fi, err := os.Stat(real)
	if err != nil {
		return false
	}
	dir := real
	if !fi.IsDir() {
		dir = filepath.Dir(real)
	}
	root, _, err := safefs.OpenDir(dir, false)
	if err != nil {
		return false
	}
	defer root.Close()
	if fi.IsDir() {
		return true
	}
	// Judged again through the directory judged, so that a file swapped in
	// since the Stat is not the one passed.
	fi, err = root.Lstat(filepath.Base(real))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0 && fi.Mode().Perm()&0o022 == 0
}
