//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

type fileID struct{ dev, ino uint64 }

func stampOf(st *unix.Stat_t) FileStamp {
	uid := st.Uid
	return FileStamp{
		owner:   &uid,
		id:      fileID{uint64(st.Dev), uint64(st.Ino)}, //nolint:unconvert // int32 on darwin
		size:    st.Size,
		modTime: time.Unix(st.Mtim.Unix()),
	}
}

// readRegular reads at most limit bytes of the regular file path and
// stamps it. It never follows a final symlink and never blocks on a FIFO,
// and takes four system calls where os.ReadFile after os.Lstat takes
// eight: a sweep reads thousands of files.
func readRegular(path string, limit int) ([]byte, FileStamp, error) {
	fd, st, err := openRegular(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, FileStamp{}, err
	}
	defer unix.Close(fd)
	b, err := readFD(fd, st.Size, limit, false)
	if err != nil {
		return nil, FileStamp{}, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, stampOf(&st), nil
}

// readFD reads at most limit bytes of the open file fd, whose fstat gave
// size: one byte more than that, so that a file grown since is seen to
// go on. With atSize it stops once size bytes are read, without the call
// that would find the end: the caller compares the stamp, whose size or
// time a later change moves, before it acts.
func readFD(fd int, size int64, limit int, atSize bool) ([]byte, error) {
	buf := make([]byte, min(int64(limit), size+1))
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
		if atSize && int64(n) == size {
			break
		}
	}
	return buf[:n], nil
}

// stamp stamps path without following a final symlink.
func stamp(path string) (FileStamp, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return stampOf(&st), nil
}

func readRegularFile(path string, max int64) ([]byte, error) {
	fd, st, err := openRegular(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if st.Size > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, at most %d accepted", ErrTooBig, st.Size, max)}
	}
	// One byte more than allowed, so a file that grows while read is seen.
	buf := make([]byte, min(max, st.Size)+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	if int64(n) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooBig, max)}
	}
	return buf[:n], nil
}

func openLockFile(path string, create bool) (*os.File, error) {
	flags := unix.O_RDWR
	if create {
		flags |= unix.O_CREAT
	}
	fd, _, err := openRegular(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	// A regular file ignores O_NONBLOCK for I/O; flock does not see it.
	return os.NewFile(uintptr(fd), path), nil
}

func openAppend(path string) (*os.File, error) {
	fd, _, err := openRegular(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readTail reads with pread from the offset fstat gave: a file that
// shrinks meanwhile gives less, one that grows no more than was sized.
func readTail(path string, limit int64) ([]byte, FileStamp, error) {
	fd, st, err := openRegular(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, FileStamp{}, err
	}
	defer unix.Close(fd)
	off := max(st.Size-limit, 0)
	buf := make([]byte, st.Size-off)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, FileStamp{}, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], stampOf(&st), nil
}

// openRegular opens path with flags, never following a final link nor
// blocking on a FIFO, and refuses anything but a regular file with
// ErrNotRegular: a link (ELOOP), a FIFO opened for writing with no reader
// (ENXIO, at once thanks to O_NONBLOCK; with a reader, fstat tells), a
// directory opened for writing (EISDIR), or whatever fstat says is not a
// regular file. It returns the descriptor and its fstat.
func openRegular(path string, flags int, perm uint32) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, perm)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR) {
		err = ErrNotRegular
	}
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return fd, st, nil
}

func roomIn(dir string) (Room, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Room{}, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	r := Room{
		Bytes: st.Bavail * uint64(st.Bsize), //nolint:unconvert // int64 on linux, uint32 on darwin
		Files: st.Ffree,
		// ST_RDONLY on Linux and MNT_RDONLY on macOS are both bit 0.
		ReadOnly: uint64(st.Flags)&1 != 0, //nolint:unconvert // int64 on linux, uint32 on darwin
	}
	if st.Files == 0 {
		// A file system without an inode count (btrfs, some network
		// ones) reports zero of zero: not full.
		r.Files = ^uint64(0)
	}
	return r, nil
}

func mayWrite(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
