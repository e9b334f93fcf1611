package safefs

import (
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
