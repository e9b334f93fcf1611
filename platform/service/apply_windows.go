package service

import (
	"errors"
	"os"
	"path/filepath"
)

// writeDefinition writes f as a new file beside f.Path and renames it into
// place, so that a crash leaves the old file or the new one. No plan writes
// a file on Windows today (the SCM holds the service); there is no sudo
// whose user could plant a link for an elevated install to follow.
func writeDefinition(f File) error {
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(f.Data)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// removeDefinition removes the file at path; one already gone is removed.
func removeDefinition(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
