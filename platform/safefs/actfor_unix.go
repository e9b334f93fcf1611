//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
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

func mkdirFor(dir string, uid int) error {
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
	if err := root.Mkdir(name, 0o700); err == nil {
		// Lchown: should the user have swapped the new directory for a
		// link already, the link is theirs to keep, and nothing else
		// changes owner.
		if err := root.Lchown(name, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: here, Err: unwrapPath(err)}
		}
		return nil
	} else if !errors.Is(err, os.ErrExist) {
		return &os.PathError{Op: "mkdir", Path: here, Err: unwrapPath(err)}
	}
	fi, err = root.Lstat(name)
	if err != nil {
		return &os.PathError{Op: "lstat", Path: here, Err: unwrapPath(err)}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != uid {
		return &os.PathError{Op: "mkdir", Path: here, Err: fmt.Errorf("%w: it exists and is no directory of uid %d's", ErrUnsafeDir, uid)}
	}
	return nil
}
