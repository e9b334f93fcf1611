package safefs

import (
	"golang.org/x/sys/windows"
)

// renameNoReplace is MoveFileEx without MOVEFILE_REPLACE_EXISTING, which
// fails when newpath exists and moves a reparse point itself, not its
// target.
func renameNoReplace(oldpath, newpath string) error {
	from, err := windows.UTF16PtrFromString(oldpath)
	if err != nil {
		return err
	}
	to, err := windows.UTF16PtrFromString(newpath)
	if err != nil {
		return err
	}
	// ERROR_FILE_EXISTS and ERROR_ALREADY_EXISTS match os.ErrExist.
	return windows.MoveFileEx(from, to, 0)
}
