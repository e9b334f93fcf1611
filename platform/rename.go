package platform

import (
	"errors"
	"fmt"
	"os"
)

// RenameNoReplace renames oldpath to newpath, failing with an error that
// matches os.ErrExist if newpath exists; it never overwrites, so no file's
// bytes are lost to the rename. It does not follow a final symlink at
// either path.
func RenameNoReplace(oldpath, newpath string) error {
	err := renameNoReplace(oldpath, newpath)
	if err == nil {
		return nil
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}

// linkRename is the fallback where the OS or file system has no
// no-replace rename: link fails if newpath exists, and the unlink then
// drops the old name. A crash between the two leaves both names, which
// costs no bytes.
func linkRename(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return le.Err
		}
		return err
	}
	if err := os.Remove(oldpath); err != nil {
		return fmt.Errorf("linked, but %w", err)
	}
	return nil
}
