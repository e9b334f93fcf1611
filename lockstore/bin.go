package lockstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/hermes-agent/hermes-supervisor/platform/logfield"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// binName is the sweep's private directory inside the lock dir. A stale
// token lock is renamed into it, judged there once more and unlinked.
// Renaming it to <name>.stale beside the others, as Hermes does, would
// add a name to the lock dir and take it out again: on ext4 a lock dir of
// 100 000 files pays for both in its hashed index, so that rename cost
// about 5 µs more per file than a rename out into a small directory.
// Hermes looks in the lock dir only for "*.lock" names, which a directory
// of this name is not.
const binName = ".hermes-supervisor-sweep"

// SweepBin returns <lockdir>/.hermes-supervisor-sweep, the directory a
// sweep renames stale token locks into before it unlinks them. A sweep
// makes it (mode 0700) and leaves it, empty unless a sweep was killed
// mid-file.
func (l Layout) SweepBin() string { return filepath.Join(l.LockDir, binName) }

// binned matches a name in the bin: the token lock's name, a dot and the
// moving sweep's random 16-hex-digit tag. A sweep moves each name once,
// so with the tag every name in the bin is one sweep's one file: no two
// sweeps, nor a sweep and a killed one's leftover, ever rename onto the
// same name, and the file a sweep finds there is the one it moved.
var binned = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_.-]+-[0-9a-f]{16}\.lock\.[0-9a-f]{16}$`)
})

// sweepBin is the bin as one sweep uses it.
type sweepBin struct {
	dir *safefs.Dir
	tag string // this sweep's suffix for the names it moves in
}

// openBin opens the lock dir's bin, making it if need be. A lock dir
// another user owns, a bin that is a link or not private, and Windows,
// where os.Root renames only within itself, leave it nil: the sweep then
// renames to <name>.stale in the lock dir, as Hermes does.
func (s *Store) openBin(ld *safefs.Dir) *safefs.Dir {
	d, err := ld.Sub(binName)
	if err != nil {
		s.log.Debug("sweep renames aside in the lock dir itself", logfield.String("bin", s.layout.SweepBin()), logfield.Error(err))
		return nil
	}
	return d
}

// newSweepBin is the bin d (nil for none) as one sweep uses it, with a
// tag of its own.
func newSweepBin(d *safefs.Dir) *sweepBin {
	if d == nil {
		return nil
	}
	var tag [8]byte
	_, _ = rand.Read(tag[:]) // never fails (crypto/rand)
	return &sweepBin{dir: d, tag: hex.EncodeToString(tag[:])}
}

// aside is where remove renames name to: into the bin under this sweep's
// tag, or to <name>.stale in the lock dir when there is no bin.
func (b *sweepBin) aside(ld *safefs.Dir, name string) (*safefs.Dir, string) {
	if b == nil {
		return ld, name + ".stale"
	}
	return b.dir, name + "." + b.tag
}

// binLeftovers judges the files a killed sweep left in the bin b, by age as
// the lock dir's .stale files are: one younger than LeftoverAge may be
// another sweep's, between its rename and its unlink. Only names of the
// bin's shape count; anything else there is left alone.
func (s *Store) binLeftovers(b *sweepBin) ([]judged, error) {
	if b == nil {
		return nil, nil
	}
	names, err := b.dir.Names()
	if err != nil {
		return nil, &FileError{Path: s.layout.SweepBin(), Op: "list", Err: err, Hint: hintFor(err)}
	}
	var out []judged
	for _, n := range names {
		if !binned().MatchString(n) {
			continue
		}
		e, ok := s.judgeLeftoverIn(b.dir, filepath.Join(s.layout.SweepBin(), n))
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// removeHeld removes the leftover e, name in d, if it is still the file
// judged and nobody holds it locked.
func (s *Store) removeHeld(d *safefs.Dir, name string, e *judged) {
	h, ok := s.holdJudged(d, name, e)
	if !ok {
		return
	}
	defer h.Release()
	if err := d.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.fail(e, "remove", err)
		return
	}
	e.Action = ActionSwept
}
