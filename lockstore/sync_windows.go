package lockstore

import "os"

// syncDir is a no-op: Windows cannot open a directory for fsync, and
// MoveFileEx with replace is already durable on NTFS.
func syncDir(string) {}

// keepOwner is a no-op: a file created in a directory inherits its ACL,
// which is what Windows has in place of a mode and owner.
func keepOwner(*os.File, os.FileInfo) error { return nil }

// keepDirsOpen: an open directory handle can stand in the way of renaming
// or removing it, so none stays open between restarts (see Store.Hold).
const keepDirsOpen = false
