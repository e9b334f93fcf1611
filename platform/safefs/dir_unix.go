//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// dirSys is the directory's descriptor, on which every call is an *at
// system call: one per step, where os.Root adds an lstat to a rename and
// fcntl and epoll calls to an open.
type dirSys struct {
	f  *os.File
	fd int
}

func (d *Dir) open() error {
	f, err := d.root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	// A directory os.Root opened stats every name it lists (Go 1.26): a
	// system call more for each file of every listing, where getdents'
	// d_type already says whether it is a regular file. "." opened through
	// the root's own descriptor is the same directory, and a File of ours
	// on it lists without them. Named by the root's path, which is where a
	// file system without d_type has its names stat'ed; what that says is
	// only a filter, as every file is checked again when it is opened.
	fd, err := openatRetry(int(f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.root.Name(), Err: err}
	}
	d.sys = dirSys{f: os.NewFile(uintptr(fd), d.root.Name()), fd: fd}
	return nil
}

func (d *Dir) close() error { return d.sys.f.Close() }

// openat opens name in d read-only, never following a final symlink nor
// blocking on a FIFO, and refuses anything but a regular file.
func (d *Dir) openat(name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if err := plainName(name); err != nil {
		return -1, st, err
	}
	fd, err := openatRetry(d.sys.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if errors.Is(err, unix.ELOOP) {
		err = ErrNotRegular
	}
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return fd, st, nil
}

func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// plainName refuses a name that is not one entry of the directory: the
// *at calls would walk a path with slashes, and ".." out of it.
func plainName(name string) error {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return &os.PathError{Op: "open", Path: name, Err: errors.New("not a plain file name")}
		}
	}
	if name == "" || name == "." || name == ".." {
		return &os.PathError{Op: "open", Path: name, Err: errors.New("not a plain file name")}
	}
	return nil
}

func (d *Dir) read(name string, limit int) ([]byte, FileStamp, error) {
	b, st, fd, err := d.openRead(name, limit)
	if err == nil {
		unix.Close(fd)
	}
	return b, st, err
}

// openedSys is the descriptor kept open and the file it was opened on.
type openedSys struct {
	fd int
	id fileID
}

func (d *Dir) readOpen(name string, limit int) ([]byte, FileStamp, *Opened, error) {
	b, st, fd, err := d.openRead(name, limit)
	if err != nil {
		return nil, FileStamp{}, nil, err
	}
	return b, st, &Opened{sys: openedSys{fd: fd, id: st.id}}, nil
}

// openRead is read leaving the file open: fd, when there is no error.
func (d *Dir) openRead(name string, limit int) (_ []byte, _ FileStamp, fd int, _ error) {
	fd, st, err := d.openat(name)
	if err != nil {
		return nil, FileStamp{}, -1, err
	}
	// A read that reaches the stamped size has the file as stamped (see
	// readFD): the callers compare stamps before they act.
	b, err := readFD(fd, st.Size, limit, true)
	if err != nil {
		unix.Close(fd)
		return nil, FileStamp{}, -1, &os.PathError{Op: "read", Path: name, Err: err}
	}
	return b, stampOf(&st), fd, nil
}

func (o *Opened) close() error { return unix.Close(o.sys.fd) }

// spareDescriptors is a quarter of RLIMIT_NOFILE's soft limit, which Go
// raises to the hard one as it starts.
func spareDescriptors() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return int(min(lim.Cur/4, 1<<20))
}

func (d *Dir) stamp(name string) (FileStamp, error) {
	if err := plainName(name); err != nil {
		return FileStamp{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.sys.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: name, Err: ErrNotRegular}
	}
	return stampOf(&st), nil
}

func (d *Dir) moveTo(oldname string, to *Dir, newname string) error {
	if err := plainNames(oldname, newname); err != nil {
		return err
	}
	if err := unix.Renameat(d.sys.fd, oldname, to.sys.fd, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (d *Dir) linkTo(oldname string, to *Dir, newname string) error {
	if err := plainNames(oldname, newname); err != nil {
		return err
	}
	// Flags 0: a link at oldname is linked, not followed.
	if err := unix.Linkat(d.sys.fd, oldname, to.sys.fd, newname, 0); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func plainNames(names ...string) error {
	for _, n := range names {
		if err := plainName(n); err != nil {
			return err
		}
	}
	return nil
}

func (d *Dir) sub(name string) (*Dir, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.sys.fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: ".", Err: err}
	}
	if int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s: the directory it would be made in is owned by uid %d, not %d: %w", name, st.Uid, os.Geteuid(), ErrUnsafeDir)
	}
	fd, err := openatRetry(d.sys.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if errors.Is(err, unix.ENOENT) {
		if err = unix.Mkdirat(d.sys.fd, name, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = openatRetry(d.sys.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
		}
	}
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s is not a directory (a link?): %w", name, ErrUnsafeDir)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%s has owner %d and mode %#o, not %d and 0700: %w", name, st.Uid, st.Mode&0o7777, os.Geteuid(), ErrUnsafeDir)
	}
	f := os.NewFile(uintptr(fd), name)
	return &Dir{sys: dirSys{f: f, fd: fd}}, nil
}

func (d *Dir) stillHas(name string, sub *Dir) bool {
	var named, held unix.Stat_t
	if plainName(name) != nil ||
		unix.Fstatat(d.sys.fd, name, &named, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		unix.Fstat(sub.sys.fd, &held) != nil {
		return false
	}
	return named.Dev == held.Dev && named.Ino == held.Ino &&
		held.Mode&unix.S_IFMT == unix.S_IFDIR && int(held.Uid) == os.Geteuid() && held.Mode&0o077 == 0
}

func (d *Dir) names() ([]string, error) {
	// From the start each time: the descriptor's offset is where the
	// last listing ended.
	if _, err := d.sys.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return d.sys.f.Readdirnames(-1)
}

func (d *Dir) eachBatch(n int, f func([]os.DirEntry)) error {
	if _, err := d.sys.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return ReadBatches(d.sys.f, n, f)
}

func (d *Dir) remove(name string) error {
	if err := plainName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.sys.fd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// heldSys is the open descriptor that holds the lock; closing it lets go.
type heldSys struct{ fd int }

func (d *Dir) hold(name string) (*Held, FileStamp, error) {
	fd, st, err := d.openat(name)
	if err != nil {
		return nil, FileStamp{}, err
	}
	return lockOpen(fd, name, stampOf(&st))
}

// holdOpened stats name where Hold opens it: an fstatat in place of an
// openat and fstat. The name is checked before the lock is tried, as
// Hold's open comes before its lock, so that what each finds is the same.
func (d *Dir) holdOpened(name string, o *Opened) (*Held, FileStamp, error) {
	st, err := d.stamp(name)
	if err != nil || st.id != o.sys.id {
		o.close()
		return nil, st, err
	}
	return lockOpen(o.sys.fd, name, st)
}

// lockOpen tries LockFile's lock on fd, name's file as stamped, without
// waiting, and closes fd unless it returns it held.
func lockOpen(fd int, name string, st FileStamp) (*Held, FileStamp, error) {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return &Held{sys: heldSys{fd: fd}}, st, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			err = ErrLocked
		}
		return nil, st, &os.PathError{Op: "lock", Path: name, Err: err}
	}
}

func (h *Held) release() error { return unix.Close(h.sys.fd) }
