//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

func actsFor(uid int) bool { return os.Geteuid() == 0 && uid != 0 }

func writeFileFor(dir, name string, data []byte, perm os.FileMode, uid int) error {
	if err := plainName(name); err != nil {
		return err
	}
	root, path, err := judge{uid: uid, gid: -1, who: "the file is written for"}.openDir(dir, false)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(".")
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &os.PathError{Op: "stat", Path: path, Err: syscall.EINVAL}
	}
	// The temp's name as os.CreateTemp's would be, which the sweep knows
	// as a leftover should this process die before the rename.
	tmp := fmt.Sprintf(".%s.%d.tmp", name, rand.Uint32())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(path, tmp), Err: unwrapPath(err)}
	}
	fail := func(op string, err error) error {
		f.Close()
		_ = root.Remove(tmp)
		return &os.PathError{Op: op, Path: filepath.Join(path, name), Err: err}
	}
	if err := f.Chown(uid, int(st.Gid)); err != nil {
		return fail("chown", err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail("chmod", err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync", err)
	}
	if err := f.Close(); err != nil {
		_ = root.Remove(tmp)
		return &os.PathError{Op: "close", Path: filepath.Join(path, name), Err: err}
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return &os.PathError{Op: "rename", Path: filepath.Join(path, name), Err: unwrapPath(err)}
	}
	return nil
}

func mkdirFor(dir string, uid int) error { return mkdirForThen(dir, uid, nil) }

// mkdirForThen is mkdirFor, calling made (when not nil) once it has made
// the directory: where a test does what the user may do at that moment.
func mkdirForThen(dir string, uid int, made func(path string)) error {
	parent, name := filepath.Split(filepath.Clean(dir))
	if err := plainName(name); err != nil {
		return err
	}
	root, path, err := judge{uid: uid, gid: -1, who: "the directory is made for"}.openDir(parent, false)
	if err != nil {
		return err
	}
	defer root.Close()
	here := filepath.Join(path, name)
	fi, err := root.Stat(".")
	if err != nil {
		return err
	}
	gid := int(fi.Sys().(*syscall.Stat_t).Gid)
	ours := false
	if err := root.Mkdir(name, 0o700); err == nil {
		ours = true
		if made != nil {
			made(here)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return &os.PathError{Op: "mkdir", Path: here, Err: unwrapPath(err)}
	}
	// The parent is the user's, who may have swapped what name holds
	// since the mkdir: for a hard link to a file of root's, whose owner a
	// chown by name would give away (/etc/sudoers, say), a link, or a
	// directory of root's from elsewhere in their tree. So what is there
	// now is opened, never through a link, and judged and changed owner
	// through that descriptor only.
	dirf, err := root.Open(".")
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: unwrapPath(err)}
	}
	defer dirf.Close()
	fd, err := unix.Openat(int(dirf.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
			err = fmt.Errorf("%w: it is no directory (a link?): %w", ErrUnsafeDir, err)
		}
		return &os.PathError{Op: "open", Path: here, Err: err}
	}
	f := os.NewFile(uintptr(fd), here)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: here, Err: err}
	}
	switch {
	case int(st.Uid) == uid:
		return nil
	case !ours || int(st.Uid) != os.Geteuid():
		return &os.PathError{Op: "mkdir", Path: here, Err: fmt.Errorf("%w: it exists and is no directory of uid %d's", ErrUnsafeDir, uid)}
	}
	// The directory made is empty, and no one but root can add to it:
	// one that holds anything is another, moved in.
	if names, err := f.Readdirnames(1); len(names) > 0 || !errors.Is(err, io.EOF) {
		return &os.PathError{Op: "mkdir", Path: here, Err: fmt.Errorf("%w: a directory of root's holding files took the place of the one made", ErrUnsafeDir)}
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: here, Err: err}
	}
	return nil
}
