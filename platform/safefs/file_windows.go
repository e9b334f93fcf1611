package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

type fileID struct{ vol, idxHi, idxLo uint32 }

// readRegular reads at most limit bytes of the regular file path and
// stamps it; symlinks and other non-regular files are refused. It opens
// the file sharing delete (see openNoReparse), so that Hermes' os.replace
// of a file being read does not fail, and stamps it from the same handle.
func readRegular(path string, limit int) ([]byte, FileStamp, error) {
	f, err := openNoReparse(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			// A directory cannot be opened without backup semantics.
			return nil, FileStamp{}, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		}
		return nil, FileStamp{}, err
	}
	defer f.Close()
	st, err := handleStamp(f, path)
	if err != nil {
		return nil, FileStamp{}, err
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return nil, FileStamp{}, err
	}
	return b, st, nil
}

// handleStamp stamps the file open as f, path's.
func handleStamp(f *os.File, path string) (FileStamp, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return FileStamp{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return FileStamp{
		id:      fileID{info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow},
		size:    int64(info.FileSizeHigh)<<32 | int64(info.FileSizeLow),
		modTime: time.Unix(0, info.LastWriteTime.Nanoseconds()),
	}, nil
}

// stamp stamps path without following a final symlink.
func stamp(path string) (FileStamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return FileStamp{}, err
	}
	return FileStamp{id: windowsFileID(path), size: fi.Size(), modTime: fi.ModTime()}, nil
}

// windowsFileID reads the volume serial and file index, Windows' inode; a
// file that cannot be opened for attributes gets the zero id, leaving size
// and time to tell versions apart.
func windowsFileID(path string) fileID {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return fileID{}
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return fileID{}
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return fileID{}
	}
	return fileID{info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow}
}

// openNoReparse opens path without following a final reparse point (a
// symlink or junction), sharing delete so an open file never blocks the
// atomic replace of the state file, and refuses anything but a plain file.
func openNoReparse(path string, access, disposition uint32) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		disposition, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		// A directory is refused so, without backup semantics: say what
		// it is, as the Unix bodies do.
		if a, aerr := windows.GetFileAttributes(p); aerr == nil && a&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
			err = ErrNotRegular
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var info windows.ByHandleFileInformation
	err = windows.GetFileInformationByHandle(h, &info)
	if err == nil {
		ft, ferr := windows.GetFileType(h)
		bad := windows.FILE_ATTRIBUTE_REPARSE_POINT | windows.FILE_ATTRIBUTE_DIRECTORY | windows.FILE_ATTRIBUTE_DEVICE
		if ferr != nil || ft != windows.FILE_TYPE_DISK || info.FileAttributes&uint32(bad) != 0 {
			err = ErrNotRegular
		}
	}
	if err != nil {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

func readRegularFile(path string, max int64) ([]byte, error) {
	f, err := openNoReparse(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooBig, max)}
	}
	return b, nil
}

func readTail(path string, limit int64) ([]byte, FileStamp, error) {
	f, err := openNoReparse(path, windows.GENERIC_READ, windows.OPEN_EXISTING)
	if err != nil {
		return nil, FileStamp{}, err
	}
	defer f.Close()
	st, err := handleStamp(f, path)
	if err != nil {
		return nil, FileStamp{}, err
	}
	if _, err := f.Seek(max(st.size-limit, 0), io.SeekStart); err != nil {
		return nil, FileStamp{}, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, FileStamp{}, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, st, nil
}

func openLockFile(path string, create bool) (*os.File, error) {
	disposition := uint32(windows.OPEN_EXISTING)
	if create {
		disposition = windows.OPEN_ALWAYS
	}
	return openNoReparse(path, windows.GENERIC_READ|windows.GENERIC_WRITE, disposition)
}

func openAppend(path string) (*os.File, error) {
	return openNoReparse(path, windows.FILE_APPEND_DATA|windows.SYNCHRONIZE, windows.OPEN_ALWAYS)
}

func roomIn(dir string) (Room, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return Room{}, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return Room{}, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return Room{Bytes: avail, Files: ^uint64(0)}, nil
}

func mayWrite(dir string) error {
	return &os.PathError{Op: "access", Path: dir, Err: errors.ErrUnsupported}
}
