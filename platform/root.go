package platform

import "os"

// A sweep that acts on paths re-resolves them at every step, so a directory
// swapped for a symlink between two steps redirects the next one. The
// functions below work on a name inside an os.Root, the directory as it was
// opened, and never leave it.

// RootStamp stamps name, a file in the directory root was opened on. A
// final symlink is never followed out of root, and anything but a regular
// file is refused with ErrNotRegular, so the stamp is of the file a sweep
// is about to act on and not of one elsewhere.
func RootStamp(root *os.Root, name string) (FileStamp, error) { return rootStamp(root, name) }

// ReadRoot reads at most limit bytes of the regular file name in root and
// stamps it, as ReadRegular does for a path: it never blocks on a FIFO and
// refuses anything but a regular file with ErrNotRegular.
func ReadRoot(root *os.Root, name string, limit int) ([]byte, FileStamp, error) {
	return readRoot(root, name, limit)
}

// SameFile reports whether two stamps are of one file (device and inode on
// Unix, volume and file index on Windows), whatever its size and time: a
// file replaced by another of the same name and bytes is not the same
// file. A stamp with no identity is the same file as none.
func (s FileStamp) SameFile(o FileStamp) bool { return s.id == o.id && s.id != fileID{} }

// RemoveIn removes name, a file in the directory root was opened on,
// without following a final symlink or leaving root.
func RemoveIn(root *os.Root, name string) error { return removeIn(root, name) }
