//go:build unix

package lockstore

import (
	"errors"
	"os"
	"syscall"
)

// syncDir makes a rename durable; best effort, since some file systems
// refuse to fsync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// keepOwner gives the replacement f the owner and group of the file it
// replaces. Only root may give a file away; anyone else keeps the file
// their own, as the replaced one most likely was.
func keepOwner(f *os.File, old os.FileInfo) error {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, os.ErrPermission) {
		return err
	}
	return nil
}

// keepDirsOpen: an open directory can be renamed and removed here, so the
// home and lock dir a restart opened may stay open for the next one (see
// Store.Hold).
const keepDirsOpen = true
