package lockstore

import (
	"errors"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// eachLockDirBatch lists the lock dir's regular files, n names at a time,
// and hands each batch, sorted, to f before listing the next: what is held
// is a batch of names, not the 100 000 a lock dir may have. f may remove
// the files it is given (and their .stale names, gone again before f
// returns): readdir lists every other name the directory had when the
// listing began once. It lists through ld, the lock dir already opened,
// when there is one: by its path, the open costs a stat and os.File's
// fcntl and epoll calls on every restart.
func (s *Store) eachLockDirBatch(ld *safefs.Dir, n int, f func(names []string)) error {
	dir := s.layout.LockDir
	listErr := func(err error) error {
		return &FileError{Path: dir, Op: "list", Err: err, Hint: "fix the lock directory's permissions or run as its owner"}
	}
	batch := func(des []os.DirEntry) {
		names := make([]string, 0, len(des))
		for _, e := range des {
			if e.Type().IsRegular() {
				names = append(names, e.Name())
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			f(names)
		}
	}
	if ld != nil {
		if err := ld.EachBatch(n, batch); err != nil {
			return listErr(err)
		}
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return &FileError{Path: dir, Op: "stat", Err: err, Hint: "fix the lock directory's permissions or point HERMES_GATEWAY_LOCK_DIR elsewhere"}
	case !fi.IsDir():
		return &FileError{Path: dir, Err: errors.New("not a directory"), Hint: "point HERMES_GATEWAY_LOCK_DIR (or --lock-dir) at a directory, or remove the file"}
	}
	d, err := os.Open(dir)
	if err != nil {
		return listErr(err)
	}
	defer d.Close()
	if err := safefs.ReadBatches(d, n, batch); err != nil {
		return listErr(err)
	}
	return nil
}

// sortLockDir sorts the lock dir's part of a sweep's entries by path: it
// is judged in batches as listed, and a person reads it sorted. Its paths
// are distinct names of one directory, so an unstable sort gives the one
// order, without the stable sort's O(n log² n) moves of whole entries.
func sortLockDir[T any](es []T, path func(T) string) {
	slices.SortFunc(es, func(a, b T) int { return strings.Compare(path(a), path(b)) })
}
