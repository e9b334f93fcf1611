//go:build unix

package service

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// writeDefinition writes f as a new file beside f.Path and renames it
// into place, through the directory as safefs.OpenDir judged it (made if
// missing): no link on the way or at f.Path is followed, and no directory
// another user owns or may write is written in. os.WriteFile would make
// or truncate whatever a planted link points at, with the installer's
// rights. A crash leaves the old definition or the new one, never half.
func writeDefinition(f File) error {
	dir, base := filepath.Split(f.Path)
	// A directory this user may not write (a --system one, without root)
	// is a permission error, which install explains, before it is an
	// unsafe one.
	if err := safefs.MayWrite(dir); errors.Is(err, os.ErrPermission) {
		return err
	}
	root, _, err := safefs.OpenDir(filepath.Clean(dir), true)
	if err != nil {
		return err
	}
	defer root.Close()
	var tmp string
	var file *os.File
	for range 100 {
		tmp = "." + base + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
		if file, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = file.Write(f.Data)
	err = errors.Join(err, file.Chmod(f.Mode), file.Sync(), file.Close())
	if err == nil {
		err = root.Rename(tmp, base)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// removeDefinition removes the file at path, through its directory as
// safefs.OpenDir judged it: a link on the way is never followed to remove
// a file elsewhere (a link at path itself is removed, not its target).
func removeDefinition(path string) error {
	dir, base := filepath.Split(path)
	if err := safefs.MayWrite(dir); errors.Is(err, os.ErrPermission) {
		return err // as writeDefinition: install explains a permission error
	}
	root, _, err := safefs.OpenDir(filepath.Clean(dir), false)
	if err == nil {
		defer root.Close()
		err = root.Remove(base)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
