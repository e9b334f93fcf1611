package lockstore

import (
	"context"
	"errors"
	"os"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// Facts store.go gathers for the rules beyond a file's bytes: the rest of
// a large record, whether a file is held locked, and the home "~" means.

// readLarge reads a file again with rd, up to maxReadable bytes: a live
// gateway with a long command line writes records beyond MaxRecordSize.
// One such read runs at a time.
func (s *Store) readLarge(rd func(limit int) ([]byte, safefs.FileStamp, error)) ([]byte, safefs.FileStamp, error) {
	s.large.Lock()
	defer s.large.Unlock()
	return rd(maxReadable + 1)
}

// errProbe reports a file whose lock could not be probed; it is kept.
var errProbe = errors.New("cannot probe whether a process holds it locked")

// fileHeld reports whether some process holds path locked, by trying the
// lock itself on a fresh descriptor (a non-blocking exclusive flock on
// POSIX, the byte at 1 MiB on Windows, as Hermes locks) and letting go at
// once. A file that is gone is not held.
func fileHeld(path string) (bool, error) {
	held, err := probeHeld(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errors.Join(errProbe, err)
	}
	return held, nil
}

// expandUser is os.path.expanduser as Hermes' process applies it to a
// recorded hermes_home: "~" is $HOME, or the user's home in the password
// database when HOME is unset; "~name" is name's home, from the whole
// database (NSS) as Python's pwd module reads it. ok is false where
// Python's expansion cannot be reproduced (see expandable).
func expandUser(ctx context.Context, p string) (string, bool) {
	if !expandable(p) {
		return p, false
	}
	home, set := os.LookupEnv("HOME")
	if !set {
		if u, err := passwd.Current(ctx); err == nil {
			home = u.HomeDir
		}
	}
	return pyparse.ExpandUser(p, home, func(name string) (string, bool) {
		u, err := passwd.Lookup(ctx, name)
		if err != nil {
			return "", false
		}
		return u.HomeDir, true
	}), true
}
