package safefs

import (
	"errors"
	"os"
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
	owner   *uint32
}

// ModTime is the file's modification time.
func (s FileStamp) ModTime() time.Time { return s.modTime }

// Owner is the uid that owns the file; nil where owners are no uids
// (Windows, whose owner is a SID).
func (s FileStamp) Owner() *uint32 { return s.owner }

// Same reports whether two stamps describe one unchanged file.
func (s FileStamp) Same(o FileStamp) bool {
	return s.id == o.id && s.size == o.size && s.modTime.Equal(o.modTime)
}

// ErrTooBig reports a file larger than its reader accepts; it is never read
// into memory.
var ErrTooBig = errors.New("file too big")

// ReadRegularFile reads the regular file path, at most max bytes. It never
// follows a final symlink (or reparse point), never blocks on a FIFO and
// refuses devices and directories with ErrNotRegular, so a hostile file in
// a directory someone else can write cannot hang, redirect or exhaust the
// reader. A larger file is an error wrapping ErrTooBig that names it.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	b, err := readRegularFile(path, max)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// ReadTail reads at most the last limit bytes of the regular file path,
// refusing what ReadRegularFile refuses: a log another user may write
// (one a root install reads back to explain a failure) cannot make it
// follow a final link, hang on a FIFO or read gigabytes. The directories
// above it are followed as they are, links and all, and a hard link
// reads what it names: the stamp's Owner says whose file was read, which
// a reader acting for a user checks.
func ReadTail(path string, limit int64) ([]byte, FileStamp, error) { return readTail(path, limit) }

// OpenLockFile opens the lock file path for reading and writing, creating
// it with mode 0644 when create is set. Like ReadRegularFile it refuses a
// symlink, reparse point, FIFO, device or directory, so a lock taken as
// root cannot be turned into a write to another file.
func OpenLockFile(path string, create bool) (*os.File, error) { return openLockFile(path, create) }

// OpenAppend opens the log file path for appending, creating it with mode
// 0600 when missing. Like OpenLockFile it never follows a final symlink (or
// reparse point), never blocks on a FIFO and refuses anything but a regular
// file with ErrNotRegular: whoever can write the log's directory (the
// user's other programs, the gateway) can then neither hang the writer
// before it starts nor turn its writes into writes to another file.
func OpenAppend(path string) (*os.File, error) { return openAppend(path) }

// Room is what the file system holding a directory has left for new files.
type Room struct {
	Bytes    uint64 // what an unprivileged user may still write
	Files    uint64 // inodes left; ^uint64(0) where the file system does not count them
	ReadOnly bool   // mounted read-only
}

// RoomIn returns the room left on the file system that holds dir.
func RoomIn(dir string) (Room, error) { return roomIn(dir) }

// MayWrite reports whether the OS's own permission check (mode bits, ACLs,
// the immutable flag, a security module, a read-only mount) lets this
// process create and remove entries in dir, without making one. Where the
// OS has no such check (Windows) it returns an error wrapping
// errors.ErrUnsupported, and only making a file can tell.
func MayWrite(dir string) error { return mayWrite(dir) }

// ReadRegular reads at most limit bytes of the regular file path and
// stamps it. It never follows a final symlink (or reparse point), never
// blocks on a FIFO and refuses anything but a regular file with
// ErrNotRegular. On Unix it takes four system calls where os.ReadFile after
// os.Lstat takes eight (a sweep reads thousands of files); on Windows it
// opens the file sharing delete, so that Hermes' os.replace of a file being
// read does not fail, and stamps it from the same handle.
func ReadRegular(path string, limit int) ([]byte, FileStamp, error) {
	return readRegular(path, limit)
}

// Stamp stamps path without following a final symlink.
func Stamp(path string) (FileStamp, error) { return stamp(path) }
