package lockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// Facts store.go gathers for the rules: a file's bytes as read for
// judging, the rest of a large record, whether a file is held locked, and
// the home "~" means.

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

// maxHomeLookups bounds how many account names one judgement asks the
// account database about. Each may run getent (platform/passwd), about a
// millisecond where reading a record takes microseconds: a lock dir of
// records naming "~name" homes, each a different name, would otherwise cost
// a process per file. Past the bound a "~name" is not expanded, which
// keeps the record (homeMatches): more kept, never less.
const maxHomeLookups = 16

// homes is os.path.expanduser as Hermes' process applies it to a recorded
// hermes_home, for one judgement: "~" is $HOME, or the user's home in the
// account database when HOME is unset; "~name" is name's home, from the
// whole database (NSS) as Python's pwd module reads it. Each name is asked
// once; judging runs on several goroutines.
type homes struct {
	ctx    context.Context
	lookup func(ctx context.Context, name string) (string, error) // "" for the current user
	mu     sync.Mutex
	asked  map[string]homeAnswer
}

type homeAnswer struct {
	dir string
	ok  bool
}

func newHomes(ctx context.Context) *homes {
	return &homes{ctx: ctx, lookup: homeOf, asked: map[string]homeAnswer{}}
}

// homeOf is name's home in the account database, or the current user's
// for "".
func homeOf(ctx context.Context, name string) (string, error) {
	if name == "" {
		u, err := passwd.Current(ctx)
		if err != nil {
			return "", err
		}
		return u.HomeDir, nil
	}
	u, err := passwd.Lookup(ctx, name)
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}

// ask answers name from memory, or from the database within the bound;
// asked is false past the bound.
func (h *homes) ask(name string) (a homeAnswer, asked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.asked[name]; ok {
		return a, true
	}
	if len(h.asked) >= maxHomeLookups {
		return homeAnswer{}, false
	}
	dir, err := h.lookup(h.ctx, name)
	a = homeAnswer{dir: dir, ok: err == nil}
	h.asked[name] = a
	return a, true
}

// expand expands p; ok is false where Python's expansion cannot be
// reproduced (see expandable), or the names asked about reached the bound.
func (h *homes) expand(p string) (string, bool) {
	if !expandable(p) {
		return p, false
	}
	home, set := os.LookupEnv("HOME")
	if !set {
		if a, asked := h.ask(""); asked && a.ok {
			home = a.dir
		}
	}
	bounded := true
	out := pyparse.ExpandUser(p, home, func(name string) (string, bool) {
		a, asked := h.ask(name)
		bounded = bounded && asked
		return a.dir, a.ok
	})
	return out, bounded
}

// read loads a file for judging; ok is false when it does not exist. A
// file that cannot be read gets ActionError and is judged no further.
func (s *Store) read(path string, kind Kind) (judged, bool) { return s.readIn(nil, path, kind, false) }

// readIn is read through d, the directory that holds path, when d is not
// nil; with keep, the file read through d is kept open in e.open where
// there is room (see keptOpen).
func (s *Store) readIn(d *safefs.Dir, path string, kind Kind, keep bool) (judged, bool) {
	keep = keep && d != nil && s.open.take()
	var open *safefs.Opened
	rd := func(limit int) ([]byte, safefs.FileStamp, error) {
		switch {
		case keep:
			b, st, o, err := d.ReadOpen(filepath.Base(path), limit)
			_ = open.Close() // a large record's second read replaces the first's
			open = o
			return b, st, err
		case d != nil:
			return d.Read(filepath.Base(path), limit)
		}
		return safefs.ReadRegular(path, limit)
	}
	defer func() {
		if keep && open == nil {
			s.open.put()
		}
	}()
	e := judged{Entry: Entry{Path: path, Kind: kind}}
	data, stamp, err := rd(MaxRecordSize + 1)
	if err == nil && len(data) > MaxRecordSize {
		data, stamp, err = s.readLarge(rd)
	}
	if errors.Is(err, os.ErrNotExist) {
		return e, false
	}
	if err != nil {
		e.Action, e.Reason = ActionError, "cannot read"
		e.Err = &FileError{Path: path, Op: "read", Err: err, Hint: hintFor(err)}
		return e, true
	}
	e.stamp, e.open = stamp, open
	e.facts = fileFacts{data: data, mtime: stamp.ModTime()}
	return e, true
}

// readRecord is read plus the one reader's reading of the record; with
// writer, the uid owning the file is taken as its writer's.
func (s *Store) readRecord(path string, kind Kind, barePID, writer bool) (judged, bool) {
	return s.readRecordIn(nil, path, kind, barePID, writer, false)
}

// readRecordIn is readRecord through d, keeping it open with keep (see
// readIn).
func (s *Store) readRecordIn(d *safefs.Dir, path string, kind Kind, barePID, writer, keep bool) (judged, bool) {
	e, ok := s.readIn(d, path, kind, keep)
	if ok && e.Action != ActionError {
		var uid *uint32
		if writer {
			uid = e.stamp.Owner()
		}
		e.facts = recordFacts(e.facts.data, e.facts.mtime, barePID, uid)
	}
	return e, ok
}

func hintFor(err error) string {
	if h := readHint(err); h != "" {
		return h
	}
	return "remove or fix it by hand; it was kept"
}
