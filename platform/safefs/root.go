package safefs

import (
	"os"
)

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

// OpenDir opens the directory at the absolute path dir for a process that
// will create, judge and remove files in it, and returns it with the path
// it resolved to (no links left). On Unix it walks dir from "/" one
// component at a time without following any link it has not judged: every
// component (each directory and each link on the way, the ones a link
// leads to included) must belong to us or to root, no directory on the way
// may be writable by another user unless it is sticky, and dir itself must
// be ours and writable by no one else; each directory is opened by the
// identity it was judged by, so a component swapped during the walk is
// refused, not followed. A refusal wraps ErrUnsafeDir and names the
// component. With create, missing components are made, mode 0700. Every
// later operation through the returned root stays in the directory
// judged, whatever happens to its path.
func OpenDir(dir string, create bool) (*os.Root, string, error) { return openDir(dir, create) }

// StillPrivate reports whether fi, a directory OpenDir opened and judged,
// still passes the test OpenDir put its last component to: ours, and not
// writable by other users. Where OpenDir judges otherwise (Windows) it
// reports false: a caller must open the directory again.
func StillPrivate(fi os.FileInfo) bool { return stillPrivate(fi) }
