package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
)

// rootStamp opens name through root to read its file index, which no
// FileInfo carries on Windows. root.Lstat first refuses a reparse point;
// os.Root resolves one met later only inside root, so the stamp is never
// of a file outside it.
func rootStamp(root *os.Root, name string) (FileStamp, error) {
	return openRoot(root, name, func(*os.File) error { return nil })
}

func readRoot(root *os.Root, name string, limit int) ([]byte, FileStamp, error) {
	var b []byte
	st, err := openRoot(root, name, func(f *os.File) error {
		var rerr error
		b, rerr = io.ReadAll(io.LimitReader(f, int64(limit)))
		return rerr
	})
	return b, st, err
}

// openRoot opens name through root, stamps it from the handle and hands
// the open file to use.
func openRoot(root *os.Root, name string, use func(*os.File) error) (FileStamp, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return FileStamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return FileStamp{}, &os.PathError{Op: "lstat", Path: name, Err: ErrNotRegular}
	}
	f, err := root.Open(name)
	if err != nil {
		return FileStamp{}, err
	}
	defer f.Close()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return FileStamp{}, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if info.FileAttributes&(windows.FILE_ATTRIBUTE_REPARSE_POINT|windows.FILE_ATTRIBUTE_DIRECTORY|windows.FILE_ATTRIBUTE_DEVICE) != 0 {
		return FileStamp{}, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	st := FileStamp{
		id:      fileID{info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow},
		size:    int64(info.FileSizeHigh)<<32 | int64(info.FileSizeLow),
		modTime: time.Unix(0, info.LastWriteTime.Nanoseconds()),
	}
	if err := use(f); err != nil {
		return FileStamp{}, &os.PathError{Op: "read", Path: name, Err: err}
	}
	return st, nil
}

// removeIn uses os.Root.Remove, which deletes with POSIX semantics
// (FileDispositionInformationEx). Where that is not implemented (Wine says
// ERROR_INVALID_FUNCTION) it removes by path under root's name: the name
// is resolved again there, so on such systems a directory swapped for a
// link between the caller's identity check and this call is not caught.
func removeIn(root *os.Root, name string) error {
	err := root.Remove(name)
	if errors.Is(err, windows.ERROR_INVALID_FUNCTION) {
		return os.Remove(filepath.Join(root.Name(), name))
	}
	return err
}

// openDir judges no owner on Windows, where ACLs decide who may write: the
// service runs as LocalSystem over the installing user's %LOCALAPPDATA%,
// which that user owns, so an owner check would refuse the one supported
// setup (running the service as that user is issue 17; docs/security.md
// says why it is needed). It resolves dir's links once, as run does, and
// opens the result; files in it are then reached only through the root,
// which refuses a reparse point met there.
func openDir(dir string, create bool) (*os.Root, string, error) {
	if !filepath.IsAbs(dir) {
		return nil, "", fmt.Errorf("open %s: not an absolute path", dir)
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", err
		}
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, "", err
	}
	return r, resolved, nil
}

func stillPrivate(os.FileInfo) bool { return false }
