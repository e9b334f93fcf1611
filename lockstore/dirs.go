package lockstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// sweepDirs are the home and the lock dir, opened once per sweep. Every
// rename and removal goes through them: a path is resolved again at each
// step, so a directory swapped for a symlink between judging and acting
// would send the action to a file elsewhere, while an opened directory
// stays the one that was judged.
type sweepDirs struct {
	home, lock *os.Root
	// ld is lock as a safefs.Dir, through which the lock dir's files are
	// judged and acted on, and bin the sweep's bin in it (nil where it is
	// refused; see openBin). A Hold opens both once for every sweep.
	ld, bin *safefs.Dir
	// borrowed marks what a Hold lent (home, lock, ld with its bin): the
	// Hold, not close, closes it.
	borrowed [3]bool
}

// openDirs opens the home and the lock dir as safefs.OpenDir does,
// following no link another user owns and passing through no directory
// another user may write: a root sweep would otherwise remove files in a
// directory of that user's choice. One that does not exist holds nothing
// to act on and stays nil. While a Hold lasts, the directories it opened
// are lent instead; one it found missing is looked for again.
func (s *Store) openDirs() (sweepDirs, error) {
	var d sweepDirs
	s.heldMu.Lock()
	if h := s.held; h != nil {
		d.home, d.borrowed[0] = h.home, h.home != nil
		d.lock, d.borrowed[1] = h.lock, h.lock != nil
		d.ld, d.bin, d.borrowed[2] = h.ld, h.bin, h.ld != nil
	}
	s.heldMu.Unlock()
	var errs []error
	for _, o := range []struct {
		dir  string
		root **os.Root
	}{{s.layout.Home, &d.home}, {s.layout.LockDir, &d.lock}} {
		if *o.root != nil {
			continue
		}
		r, _, err := safefs.OpenDir(o.dir, false)
		switch {
		case err == nil:
			*o.root = r
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, &FileError{Path: o.dir, Op: "open", Err: err, Hint: hintFor(err)})
		}
	}
	return d, errors.Join(errs...)
}

// openLockDir opens the lock dir as a safefs.Dir, and the bin in it,
// unless they are open already (or there is no lock dir).
func (s *Store) openLockDir(d *sweepDirs) error {
	if d.lock == nil || d.ld != nil {
		return nil
	}
	ld, err := safefs.OpenIn(d.lock)
	if err != nil {
		return &FileError{Path: s.layout.LockDir, Op: "open", Err: err, Hint: hintFor(err)}
	}
	d.ld, d.bin = ld, s.openBin(ld)
	return nil
}

func (d sweepDirs) close() {
	if !d.borrowed[2] {
		for _, x := range []*safefs.Dir{d.bin, d.ld} {
			if x != nil {
				x.Close()
			}
		}
	}
	for i, r := range []*os.Root{d.home, d.lock} {
		if r != nil && !d.borrowed[i] {
			r.Close()
		}
	}
}

// Hold opens the home and the lock dir once for the Release and Sweep
// calls that follow, until done. A restart releases the dead gateway's
// files, sweeps, and starts the next within a millisecond, and each step
// would otherwise walk both paths from / again, judging every component;
// every action still goes through an opened directory and re-checks its
// file first.
//
// Where an open directory can still be renamed and removed (not Windows)
// the directories stay open after done, and the next Hold takes them
// again when both paths still name them and they are still ours and
// closed to other users: a stat of each instead of a walk. That is as
// safe as a new walk: every component was ours or root's, and not open
// to other users, when it was walked, so only we or root could have
// changed a path since, and a path that still names the directory we hold
// sends every action where a new walk would. A path that names another
// directory now (moved away, replaced, deleted) is walked again.
func (s *Store) Hold() (done func()) {
	d := s.reuseKept()
	if d == nil {
		nd, _ := s.openDirs() // what failed is failed again, and said, by each call
		_ = s.openLockDir(&nd)
		d = &nd
		if keepDirsOpen && nd.home != nil && nd.lock != nil {
			s.kept = d
		}
	}
	s.heldMu.Lock()
	s.held = d
	s.heldMu.Unlock()
	return func() {
		s.heldMu.Lock()
		s.held = nil
		s.heldMu.Unlock()
		if d != s.kept {
			d.close()
		}
	}
}

// reuseKept returns the directories the last Hold kept, if both paths
// still name them (see Hold); else it closes them. The bin is kept while
// its name in the lock dir still names it and it is still private; else
// it is opened again, as a sweep without a Hold opens it.
func (s *Store) reuseKept() *sweepDirs {
	k := s.kept
	if k == nil {
		return nil
	}
	if stillNamed(s.layout.Home, k.home) && stillNamed(s.layout.LockDir, k.lock) {
		if k.ld != nil && (k.bin == nil || !k.ld.StillHas(binName, k.bin)) {
			if k.bin != nil {
				k.bin.Close()
			}
			k.bin = s.openBin(k.ld)
		}
		return k
	}
	s.kept = nil
	k.close()
	return nil
}

// stillNamed reports whether path names the directory r holds, and that
// directory is still ours and closed to other users, as the walk that
// opened it required.
func stillNamed(path string, r *os.Root) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	ri, err := r.Stat(".")
	return err == nil && os.SameFile(fi, ri) && safefs.StillPrivate(ri)
}

// of returns the opened directory that holds path, and path's name in it.
func (d sweepDirs) of(l Layout, path string) (*os.Root, string, error) {
	dir, name := filepath.Split(path)
	var r *os.Root
	switch filepath.Clean(dir) {
	case filepath.Clean(l.LockDir):
		r = d.lock
	case filepath.Clean(l.Home):
		r = d.home
	}
	if r == nil {
		return nil, "", fmt.Errorf("%s: directory not opened for the sweep: %w", dir, os.ErrNotExist)
	}
	return r, name, nil
}
