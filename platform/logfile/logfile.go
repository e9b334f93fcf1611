// Package logfile is the supervisor's own log file: appended to, rotated
// by size, and never opened through a link or on a FIFO, at start or at
// any rotation. Whoever can write the log's directory (the user, the
// gateway running as them) can plant either at its path; a FIFO would
// block every log line, and so the supervisor, and a link would have each
// rotation truncate or grow a file of the link's choosing.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// backupTime is the UTC time in a rotated file's name,
// <stem>-<time><ext>, as lumberjack named them before this package: a
// rotated log of an older supervisor is counted and pruned alike.
const backupTime = "2006-01-02T15-04-05.000"

// File is a log file rotated once it would grow past its size, keeping a
// number of rotated files beside it. It is safe for concurrent use.
type File struct {
	path    string
	max     int64
	backups int
	now     func() time.Time

	mu   sync.Mutex
	f    *os.File // nil after a rotation that could not open path
	size int64
}

// Open opens path for appending (safefs.OpenAppend: created 0600, no link
// followed, never blocking, regular files only), to be rotated once a
// write would take it past maxSize bytes, keeping backups rotated files;
// now stamps their names. A path that is no regular file is refused with
// safefs.ErrNotRegular.
func Open(path string, maxSize int64, backups int, now func() time.Time) (*File, error) {
	l := &File{path: path, max: maxSize, backups: backups, now: now}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := safefs.OpenAppend(l.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past its
// size. A rotation that fails still leaves p appended to the file at the
// path when it can be, past its size, and returns the rotation's error
// with it: a directory that refuses the rename (read-only, or a file made
// append-only) must not cost every line from then on. When the path
// cannot be opened again after a rotation (someone put a FIFO or a link
// there), Write fails at once, and tries again at the next write.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rerr error
	if l.f != nil && l.size > 0 && l.size+int64(len(p)) > l.max {
		rerr = l.rotate()
	}
	if l.f == nil {
		if err := l.open(); err != nil {
			return 0, errors.Join(rerr, fmt.Errorf("log file: %w", err))
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, errors.Join(rerr, err)
}

// rotate closes the file, renames it to its backup name (a rename moves
// whatever the name holds, a link included, and follows nothing), opens
// the path afresh and prunes the oldest backups.
func (l *File) rotate() error {
	err := l.f.Close()
	l.f = nil
	stem, ext := split(l.path)
	backup := stem + "-" + l.now().UTC().Format(backupTime) + ext
	switch rerr := os.Rename(l.path, backup); {
	case rerr == nil:
		l.prune()
	case !errors.Is(rerr, fs.ErrNotExist):
		err = errors.Join(err, fmt.Errorf("log file: rotate: %w", rerr))
	}
	if oerr := l.open(); oerr != nil {
		return errors.Join(err, fmt.Errorf("log file: %w", oerr))
	}
	return err
}

// prune removes the oldest rotated files past the number kept. A name
// removed is unlinked, whatever it is: a link planted there goes, not its
// target.
func (l *File) prune() {
	stem, ext := split(l.path)
	dir, prefix := filepath.Dir(stem), filepath.Base(stem)+"-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var old []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ext) {
			continue
		}
		if _, err := time.Parse(backupTime, strings.TrimSuffix(strings.TrimPrefix(n, prefix), ext)); err == nil {
			old = append(old, n)
		}
	}
	slices.Sort(old) // the times sort as their names do
	for len(old) > l.backups {
		_ = os.Remove(filepath.Join(dir, old[0]))
		old = old[1:]
	}
}

// split cuts path into what comes before its extension and the extension.
func split(path string) (stem, ext string) {
	ext = filepath.Ext(path)
	return strings.TrimSuffix(path, ext), ext
}

// Sync commits the file to disk.
func (l *File) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Sync()
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
