package lockstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// workerBins is how many goroutines of one sweep move files into bins of
// their own: the first into the bin itself, worker k < workerBins into
// its subdirectory k, the rest into the bin. Each move renames a file
// into a bin and unlinks it there, and both take the bin's directory
// lock: with one bin for all, one goroutine's unlink waited on another's
// rename (perf: the kernel spinning on the lock owner), and a bin per
// goroutine made a start sweep of 100 000 files 11% faster here (runs of
// the old and new build in turn, 2026-12-07). The subdirectories are made
// when their goroutine first moves a file (mode 0700) and left, as the
// bin is.
const workerBins = 8

// workerBinName matches the name of a worker's bin in the bin.
var workerBinName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9][0-9]{0,2}$`) })

// sweepBin is the bin as one sweep uses it.
type sweepBin struct {
	dir *safefs.Dir
	rel string    // its path in the lock dir, for messages
	tag *sweepTag // this sweep's suffix for the names it moves in
	log logfield.Logger
	// workers are the bins of workers 1 to workerBins-1 as forWorker
	// opened them, each used by its own goroutine alone: nil not yet
	// asked for, the bin itself where one was refused. others are
	// subdirectories opened only for their leftovers.
	workers [workerBins - 1]*sweepBin
	others  []*safefs.Dir
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
func newSweepBin(d *safefs.Dir, log logfield.Logger) *sweepBin {
	if d == nil {
		return nil
	}
	return &sweepBin{dir: d, rel: binName, tag: &sweepTag{}, log: log}
}

// sweepTag is one sweep's tag, drawn when its first file is moved, by
// whichever of its goroutines moves first: most sweeps before a restart
// move nothing, and the draw (a getrandom, and crypto/rand's generator run
// cold) was one of the restart's costs before the fork.
type sweepTag struct {
	once sync.Once
	hex  string
}

func (t *sweepTag) String() string {
	t.once.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		t.hex = hex.EncodeToString(b[:])
	})
	return t.hex
}

// forWorker returns the bin the sweep's goroutine k moves files into (see
// workerBins), opening it on first use as the bin itself was opened: a
// private directory of ours, never a link. One that is refused leaves
// that goroutine moving into the bin itself. Goroutine k alone may ask
// for bin k.
func (b *sweepBin) forWorker(k int) *sweepBin {
	if b == nil || k <= 0 || k >= workerBins {
		return b
	}
	if w := b.workers[k-1]; w != nil {
		return w
	}
	rel := filepath.Join(b.rel, strconv.Itoa(k))
	d, err := b.dir.Sub(strconv.Itoa(k))
	if err != nil {
		b.log.Debug("sweep moves into the shared bin", logfield.String("bin", rel), logfield.Error(err))
		b.workers[k-1] = b // not asked again
		return b
	}
	b.workers[k-1] = &sweepBin{dir: d, rel: rel, tag: b.tag}
	return b.workers[k-1]
}

// close closes the workers' bins and the subdirectories opened for their
// leftovers, not the bin itself, which the sweep's directories hold.
func (b *sweepBin) close() {
	if b == nil {
		return
	}
	for _, w := range b.workers {
		if w != nil && w != b {
			w.dir.Close()
		}
	}
	for _, d := range b.others {
		d.Close()
	}
}

// aside is where remove renames name to: into the bin under this sweep's
// tag, or to <name>.stale in the lock dir when there is no bin.
func (b *sweepBin) aside(ld *safefs.Dir, name string) (*safefs.Dir, string) {
	if b == nil {
		return ld, name + ".stale"
	}
	return b.dir, name + "." + b.tag.String()
}

// placeOf is where a file moved aside as aside lies, relative to the lock
// dir, for a message: in the bin, or beside its name.
func (b *sweepBin) placeOf(aside string) string {
	if b == nil {
		return aside
	}
	return filepath.Join(b.rel, aside)
}

// binLeftovers judges the files a killed sweep left in the bin b, and in
// the workers' bins in it, by age as the lock dir's .stale files are: one
// younger than LeftoverAge may be another sweep's, between its rename and
// its unlink. Only names of the bin's shape count; anything else there is
// left alone.
func (s *Store) binLeftovers(b *sweepBin) ([]judged, error) {
	if b == nil {
		return nil, nil
	}
	return s.leftoversIn(b, b.dir, s.layout.SweepBin(), true)
}

// leftoversIn judges the files of the bin's shape in d, the bin or a
// worker's bin at path; with subs, those of the workers' bins in it too.
// A worker's bin that is not a private directory of ours (a link, say)
// is not entered, and said. The subdirectories it opens are b's to close.
func (s *Store) leftoversIn(b *sweepBin, d *safefs.Dir, path string, subs bool) ([]judged, error) {
	names, err := d.Names()
	if err != nil {
		return nil, &FileError{Path: path, Op: "list", Err: err, Hint: hintFor(err)}
	}
	var out []judged
	var errs []error
	for _, n := range names {
		p := filepath.Join(path, n)
		switch {
		case binned().MatchString(n):
			if e, ok := s.judgeLeftoverIn(d, p); ok {
				out = append(out, e)
			}
		case subs && workerBinName().MatchString(n):
			sub, err := d.Sub(n)
			if err != nil {
				// Only we or root could have made it so: said, and left
				// for a person, as an unsafe bin is.
				s.log.Warn("sweep does not enter a worker bin", logfield.String("path", p), logfield.Error(err),
					logfield.String("hint", "remove it by hand; the sweep makes it again"))
				continue
			}
			b.others = append(b.others, sub)
			left, err := s.leftoversIn(b, sub, p, false)
			out = append(out, left...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
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
