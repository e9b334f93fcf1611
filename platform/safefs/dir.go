package safefs

import (
	"errors"
	"io"
	"os"
)

// Dir is a directory opened once for many calls, each on one name in it:
// a sweep of 100 000 lock files stamps, reads, locks, renames and removes
// each of them. Every call resolves the one name in the directory opened,
// never a path, so it costs no walk from "/" and stays in that directory
// whatever later happens to its path, as the os.Root it was opened from
// does; it also takes fewer system calls than that root's calls.
type Dir struct {
	root *os.Root
	//lint:ignore U1000 empty on Windows; the descriptor on Unix
	sys dirSys
}

// OpenIn opens the directory root was opened on as a Dir. Closing the Dir
// leaves root open.
func OpenIn(root *os.Root) (*Dir, error) {
	d := &Dir{root: root}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// Close closes the Dir.
func (d *Dir) Close() error { return d.close() }

// Read reads at most limit bytes of the regular file name and stamps it,
// as ReadRoot does: it never follows a final symlink, never blocks on a
// FIFO and refuses anything but a regular file with ErrNotRegular.
func (d *Dir) Read(name string, limit int) ([]byte, FileStamp, error) { return d.read(name, limit) }

// ReadOpen is Read that also keeps the file open for a later HoldOpened
// of name, where an open file can be renamed (Unix; on Windows it keeps
// none and returns a nil Opened): a sweep that judges a file and then
// removes it opens and stamps it once, where Read and then Hold opened it
// twice. The caller closes it, or hands it to HoldOpened.
func (d *Dir) ReadOpen(name string, limit int) ([]byte, FileStamp, *Opened, error) {
	return d.readOpen(name, limit)
}

// Opened is a file ReadOpen read and kept open.
type Opened struct {
	//lint:ignore U1000 empty on Windows; the descriptor and its identity on Unix
	sys openedSys
}

// Close closes o; a nil o is nothing to close.
func (o *Opened) Close() error {
	if o == nil {
		return nil
	}
	return o.close()
}

// SpareDescriptors is how many files a caller may keep open at once, as
// ReadOpen keeps them, without crowding this process's limit on open
// files: a quarter of that limit, and none where ReadOpen keeps none.
func SpareDescriptors() int { return spareDescriptors() }

// Stamp stamps name as RootStamp does, refusing anything but a regular
// file with ErrNotRegular.
func (d *Dir) Stamp(name string) (FileStamp, error) { return d.stamp(name) }

// MoveTo renames oldname in d to newname in to (d itself or another
// Dir), replacing a file at newname. Between two directories it fails
// with errors.ErrUnsupported where Sub does.
func (d *Dir) MoveTo(oldname string, to *Dir, newname string) error {
	return d.moveTo(oldname, to, newname)
}

// LinkTo gives the file oldname in d the name newname in to as well,
// never replacing a file at newname (os.ErrExist). Between two
// directories it fails with errors.ErrUnsupported where Sub does.
func (d *Dir) LinkTo(oldname string, to *Dir, newname string) error {
	return d.linkTo(oldname, to, newname)
}

// Sub opens the directory name in d as a Dir private to this user, making
// it with mode 0700 if there is none. It refuses, with ErrUnsafeDir, to
// make one in a directory another user owns, and to open a link, or a
// directory that another user owns or that anyone else may enter. On
// Windows it fails with errors.ErrUnsupported.
func (d *Dir) Sub(name string) (*Dir, error) { return d.sub(name) }

// StillHas reports whether name in d is still the directory sub, and sub
// still private to this user as Sub requires: a Dir kept open from one
// sweep to the next is used again only then. On Windows it is false.
func (d *Dir) StillHas(name string, sub *Dir) bool { return d.stillHas(name, sub) }

// Names lists the names in the directory, in no order.
func (d *Dir) Names() ([]string, error) { return d.names() }

// EachBatch lists the directory from its start, n entries at a time, and
// hands each batch to f before it reads the next: a lock dir of 100 000
// names is never held whole.
func (d *Dir) EachBatch(n int, f func([]os.DirEntry)) error { return d.eachBatch(n, f) }

// ReadBatches reads the open directory dir from its offset, n entries at
// a time, and hands each batch to f before it reads the next.
func ReadBatches(dir *os.File, n int, f func([]os.DirEntry)) error {
	for {
		des, err := dir.ReadDir(n)
		if len(des) > 0 {
			f(des)
		}
		// A short batch is not the end: on Linux os counts a name against
		// n before it lstats it (where getdents gives no type), and drops
		// a name removed in between. Only io.EOF says the listing is over.
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Remove removes the file name, never a directory.
func (d *Dir) Remove(name string) error { return d.remove(name) }

// Hold opens the regular file name, stamps the file it opened, and tries
// LockFile's lock on it without waiting: an error wrapping ErrLocked when
// another process holds it. Otherwise, on Unix, the lock is kept until
// the Held is let go, so that no process can take it in between; on
// Windows, where a file held open cannot be renamed, it is let go at
// once. The stamp is of the very file locked, not of whatever the name
// means by the time of a later call.
func (d *Dir) Hold(name string) (*Held, FileStamp, error) { return d.hold(name) }

// HoldOpened is Hold of name through o, which ReadOpen kept open from
// it: it tries the lock on o's file only if name still names that very
// file. If name now names another, it returns that file's stamp, unheld
// and without an error, as Hold would have stamped it, and a caller that
// compares stamps sees the replacement as it would after Hold. It closes
// o unless it returns it held; with a nil o it is Hold.
func (d *Dir) HoldOpened(name string, o *Opened) (*Held, FileStamp, error) {
	if o == nil {
		return d.hold(name)
	}
	return d.holdOpened(name, o)
}

// Held is a file Hold opened and, on Unix, keeps locked.
type Held struct {
	//lint:ignore U1000 empty on Windows; the locked descriptor on Unix
	sys heldSys
}

// Release lets go of the lock and closes the file.
func (h *Held) Release() error { return h.release() }
