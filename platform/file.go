package platform

import (
	"errors"
	"time"
)

// ErrNotRegular reports a path that is a directory, symlink, FIFO or device
// where a plain file was expected; it is never followed or read.
var ErrNotRegular = errors.New("not a regular file")

// FileStamp identifies one version of a file: the same file (inode or file
// index), size and modification time mean nobody replaced or rewrote it.
type FileStamp struct {
	id      fileID
	size    int64
	modTime time.Time
}

// ModTime is the file's modification time.
func (s FileStamp) ModTime() time.Time { return s.modTime }

// Same reports whether two stamps describe one unchanged file.
func (s FileStamp) Same(o FileStamp) bool {
	return s.id == o.id && s.size == o.size && s.modTime.Equal(o.modTime)
}
