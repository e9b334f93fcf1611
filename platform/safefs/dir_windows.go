package safefs

import (
	"errors"
	"fmt"
	"os"
)

// dirSys: on Windows every call goes through the os.Root, whose calls on
// a name are as cheap as any here.
type dirSys struct{}

func (d *Dir) open() error  { return nil }
func (d *Dir) close() error { return nil }

func (d *Dir) read(name string, limit int) ([]byte, FileStamp, error) {
	return readRoot(d.root, name, limit)
}

// openedSys: a file held open cannot be renamed here, so ReadOpen keeps
// none.
type openedSys struct{}

func (d *Dir) readOpen(name string, limit int) ([]byte, FileStamp, *Opened, error) {
	b, st, err := d.read(name, limit)
	return b, st, nil, err
}

func (o *Opened) close() error { return nil }

func spareDescriptors() int { return 0 }

// holdOpened is never called with an Opened here (ReadOpen keeps none).
func (d *Dir) holdOpened(name string, _ *Opened) (*Held, FileStamp, error) { return d.hold(name) }

func (d *Dir) stamp(name string) (FileStamp, error) { return rootStamp(d.root, name) }

func (d *Dir) moveTo(oldname string, to *Dir, newname string) error {
	if to != d {
		return fmt.Errorf("rename %s to another directory: %w", oldname, errors.ErrUnsupported)
	}
	return d.root.Rename(oldname, newname)
}

func (d *Dir) linkTo(oldname string, to *Dir, newname string) error {
	if to != d {
		return fmt.Errorf("link %s into another directory: %w", oldname, errors.ErrUnsupported)
	}
	return d.root.Link(oldname, newname)
}

// sub: every call here goes through an os.Root, which renames only
// within itself, so a sweep on Windows renames aside in the lock dir.
func (d *Dir) sub(name string) (*Dir, error) {
	return nil, fmt.Errorf("%s: %w", name, errors.ErrUnsupported)
}

func (d *Dir) stillHas(string, *Dir) bool { return false }

func (d *Dir) eachBatch(n int, f func([]os.DirEntry)) error {
	dir, err := d.root.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	return ReadBatches(dir, n, f)
}

func (d *Dir) names() ([]string, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (d *Dir) remove(name string) error { return removeIn(d.root, name) }

// heldSys: the lock was let go at once (see Hold).
type heldSys struct{}

func (d *Dir) hold(name string) (*Held, FileStamp, error) {
	var lerr error
	st, err := openRoot(d.root, name, func(f *os.File) error {
		if lerr = lockFile(f); lerr != nil {
			return nil
		}
		return unlockFile(f)
	})
	if err != nil {
		return nil, FileStamp{}, err
	}
	if lerr != nil {
		return nil, st, &os.PathError{Op: "lock", Path: name, Err: lerr}
	}
	return &Held{}, st, nil
}

func (h *Held) release() error { return nil }
