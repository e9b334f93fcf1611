package safefs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace uses renamex_np(RENAME_EXCL), atomic since macOS 10.12;
// on file systems without it, link and unlink.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.RenamexNp(oldpath, newpath, unix.RENAME_EXCL)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return linkRename(oldpath, newpath)
	}
	return err
}
