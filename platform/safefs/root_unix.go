//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// maxLinks bounds the links one OpenDir follows, as the kernel's own
// MAXSYMLINKS (40 on Linux) bounds a path's.
const maxLinks = 40

// walked is a directory OpenDir has opened and judged.
type walked struct {
	root *os.Root
	path string
	st   *syscall.Stat_t
}

// judge is the user a directory walk is judged for: the files of uid (and
// of root) may shape the path, and a directory writable by gid is not
// writable by others; gid -1 trusts no group. who names uid in an error.
type judge struct {
	uid, gid int
	who      string
}

// self judges for this process's effective user and group.
func self() judge { return judge{os.Geteuid(), os.Getegid(), "this supervisor runs as"} }

func openDir(dir string, create bool) (*os.Root, string, error) { return self().openDir(dir, create) }

func (j judge) openDir(dir string, create bool) (*os.Root, string, error) {
	if !filepath.IsAbs(dir) {
		return nil, "", fmt.Errorf("open %s: not an absolute path", dir)
	}
	top, err := os.OpenRoot("/")
	if err != nil {
		return nil, "", err
	}
	fi, err := top.Stat(".")
	if err != nil {
		top.Close()
		return nil, "", err
	}
	stack := []walked{{root: top, path: "/", st: fi.Sys().(*syscall.Stat_t)}}
	var kept *os.Root // the root returned, which stays open
	defer func() {
		for _, w := range stack {
			if w.root != kept {
				w.root.Close()
			}
		}
	}()
	todo := strings.Split(dir, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack[len(stack)-1].root.Close()
				stack = stack[:len(stack)-1]
			}
			continue
		}
		cur := stack[len(stack)-1]
		if err := j.parent(cur); err != nil {
			return nil, "", err
		}
		here := filepath.Join(cur.path, c)
		fi, err := cur.root.Lstat(c)
		if errors.Is(err, os.ErrNotExist) && create {
			if err = cur.root.Mkdir(c, 0o700); err == nil || errors.Is(err, os.ErrExist) {
				fi, err = cur.root.Lstat(c)
			}
		}
		if err != nil {
			return nil, "", &os.PathError{Op: "open", Path: here, Err: unwrapPath(err)}
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, "", &os.PathError{Op: "lstat", Path: here, Err: errors.New("no owner")}
		}
		if !j.trusts(st.Uid) {
			what, could := "a directory", "replace what it holds"
			if fi.Mode()&os.ModeSymlink != 0 {
				what, could = "a link", "point it anywhere"
			}
			return nil, "", fmt.Errorf("%s is %s owned by uid %d, and %s uid %d: that user could %s: %w",
				here, what, st.Uid, j.who, j.uid, could, ErrUnsafeDir)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			if links++; links > maxLinks {
				return nil, "", &os.PathError{Op: "open", Path: dir, Err: syscall.ELOOP}
			}
			target, err := cur.root.Readlink(c)
			if err != nil {
				return nil, "", &os.PathError{Op: "readlink", Path: here, Err: unwrapPath(err)}
			}
			if filepath.IsAbs(target) {
				for _, w := range stack[1:] {
					w.root.Close()
				}
				stack = stack[:1]
			}
			todo = append(strings.Split(target, "/"), todo...)
		case fi.IsDir():
			next, err := cur.root.OpenRoot(c)
			if err != nil {
				return nil, "", &os.PathError{Op: "open", Path: here, Err: unwrapPath(err)}
			}
			// os.Root follows a link met here: had c become one since
			// the Lstat, the directory opened is not the one judged.
			nfi, err := next.Stat(".")
			if err != nil || !os.SameFile(fi, nfi) {
				next.Close()
				return nil, "", fmt.Errorf("%s changed while it was opened (swapped for a link?): %w", here, ErrUnsafeDir)
			}
			stack = append(stack, walked{root: next, path: here, st: nfi.Sys().(*syscall.Stat_t)})
		default:
			return nil, "", &os.PathError{Op: "open", Path: here, Err: syscall.ENOTDIR}
		}
	}
	last := stack[len(stack)-1]
	switch {
	case int(last.st.Uid) != j.uid:
		return nil, "", fmt.Errorf("%s is owned by uid %d, and %s uid %d: %w", last.path, last.st.Uid, j.who, j.uid, ErrUnsafeDir)
	case last.st.Mode&0o002 != 0:
		return nil, "", fmt.Errorf("%s has mode %#o: any user may write it: %w", last.path, last.st.Mode&0o7777, ErrUnsafeDir)
	case j.othersMayWrite(last.st):
		return nil, "", fmt.Errorf("%s has mode %#o: group %d may write it: %w", last.path, last.st.Mode&0o7777, last.st.Gid, ErrUnsafeDir)
	}
	kept = last.root
	return last.root, last.path, nil
}

func stillPrivate(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && int(st.Uid) == os.Geteuid() && !self().othersMayWrite(st)
}

// judgeParent refuses to look up a name in w when another user could
// rename or replace what the name holds: w is writable by others and not
// sticky. In a sticky directory only the entry's owner, the directory's
// owner and root may replace an entry, and the caller requires both to be
// us or root.
func (j judge) parent(w walked) error {
	if j.othersMayWrite(w.st) && w.st.Mode&syscall.S_ISVTX == 0 {
		return fmt.Errorf("%s has mode %#o and no sticky bit: other users may replace what is in it: %w", w.path, w.st.Mode&0o7777, ErrUnsafeDir)
	}
	return nil
}

// othersMayWrite reports whether a user other than j's and root may write
// a directory with st: any user by its mode, or a group other than j's
// primary one (a user-private group counts as the user's, as
// checkPrivateDir has it).
func (j judge) othersMayWrite(st *syscall.Stat_t) bool {
	return st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && (j.gid < 0 || int(st.Gid) != j.gid))
}

// trusts reports whether a file of uid may shape j's path: the user's, or
// root's, who could do anything anyway.
func (j judge) trusts(uid uint32) bool { return int(uid) == j.uid || uid == 0 }

// unwrapPath drops os.Root's own *PathError, which names the component
// alone, so that the error names the whole path once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
