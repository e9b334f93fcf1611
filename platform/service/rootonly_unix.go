//go:build unix

package service

import (
	"os"
	"path/filepath"
	"syscall"
)

// rootOnly reports whether only root can change what path names: path,
// with its links resolved, and every directory above it up to / are
// root's and writable by no one else, except that a sticky directory
// open to all (/tmp) may hold it, since there others cannot rename or
// remove root's entries.
func rootOnly(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return false
	}
	for p, child := real, true; ; p, child = filepath.Dir(p), false {
		fi, err := os.Lstat(p)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 {
			return false
		}
		open := fi.Mode().Perm()&0o022 != 0
		if open && (child || !fi.IsDir() || fi.Mode()&os.ModeSticky == 0) {
			return false
		}
		if p == "/" {
			return true
		}
	}
}
