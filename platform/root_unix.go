//go:build unix

package platform

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rootStamp lstats name through root: os.Root.Lstat does not follow a
// final symlink, and resolves the rest of name without leaving root.
func rootStamp(root *os.Root, name string) (FileStamp, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return FileStamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: name, Err: ErrNotRegular}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: name, Err: errors.New("no device and inode")}
	}
	uid := st.Uid
	return FileStamp{
		owner:   &uid,
		id:      fileID{uint64(st.Dev), uint64(st.Ino)}, //nolint:unconvert // int32 on darwin
		size:    fi.Size(),
		modTime: fi.ModTime(),
	}, nil
}

func readRoot(root *os.Root, name string, limit int) ([]byte, FileStamp, error) {
	// os.Root opens with O_NOFOLLOW and resolves a symlink itself, inside
	// root only; O_NONBLOCK keeps a FIFO from hanging the open.
	f, err := root.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, FileStamp{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, FileStamp{}, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, FileStamp{}, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return nil, FileStamp{}, &os.PathError{Op: "read", Path: name, Err: err}
	}
	return b, stampOf(&st), nil
}

func removeIn(root *os.Root, name string) error { return root.Remove(name) }
