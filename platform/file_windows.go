package platform

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

type fileID struct{ vol, idxHi, idxLo uint32 }

// ReadRegular reads at most limit bytes of the regular file path and
// stamps it; symlinks and other non-regular files are refused.
func ReadRegular(path string, limit int) ([]byte, FileStamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, FileStamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, FileStamp{}, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	st := FileStamp{id: windowsFileID(path), size: fi.Size(), modTime: fi.ModTime()}
	f, err := os.Open(path)
	if err != nil {
		return nil, FileStamp{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return nil, FileStamp{}, err
	}
	return b, st, nil
}

// Stamp stamps path without following a final symlink.
func Stamp(path string) (FileStamp, error) {
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
