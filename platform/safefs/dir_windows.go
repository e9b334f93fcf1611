package safefs

import "os"

// dirSys: on Windows every call goes through the os.Root, whose calls on
// a name are as cheap as any here.
type dirSys struct{}

func (d *Dir) open() error  { return nil }
func (d *Dir) close() error { return nil }

func (d *Dir) read(name string, limit int) ([]byte, FileStamp, error) {
	return readRoot(d.root, name, limit)
}

func (d *Dir) stamp(name string) (FileStamp, error) { return rootStamp(d.root, name) }

func (d *Dir) rename(oldname, newname string) error { return d.root.Rename(oldname, newname) }

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
