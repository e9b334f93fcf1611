//go:build !windows

package lockstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sameHome compares two Hermes homes as Hermes' _same_hermes_home does on
// POSIX: resolved as Path.resolve(strict=False) resolves them (see
// canonical), case-sensitive. raises: resolving one meets a loop of
// symbolic links, on which Hermes' resolve() raises and it decides nothing.
func sameHome(a, b string) (same, raises bool) {
	ca, okA := canonical(a)
	cb, okB := canonical(b)
	return ca == cb, !okA || !okB
}

// canonical resolves p as Python's Path.resolve(strict=False) does on
// POSIX (posixpath.realpath): component by component from the left, each
// symbolic link followed where it stands, so that a ".." after a link
// applies to where the link leads, not lexically as filepath.Clean would;
// a component that does not exist is kept as written, and a ".." after it
// removes it. ok is false where the path leads into a loop of links,
// which Python 3.11 and 3.12's resolve() raise RuntimeError on (later ones
// return the path as it then stands, which names no directory: keeping
// the record is stricter for those). A relative p stays relative: Hermes would resolve it against a
// working directory not known here.
func canonical(p string) (string, bool) {
	r := resolver{seen: map[string]resolved{}}
	out, ok := r.join("", p)
	if ok {
		return out, true
	}
	// realpath returns the path from the loop on, normalized; resolve()
	// raises only if that still meets the loop.
	out = filepath.Clean(out)
	_, err := os.Stat(out)
	return out, !errors.Is(err, syscall.ELOOP)
}

// resolved is a link already followed: where it led, or, while it is
// being followed, done false.
type resolved struct {
	path string
	done bool
}

type resolver struct{ seen map[string]resolved }

// join resolves rest onto path, which is resolved already, as
// posixpath._joinrealpath does.
func (r *resolver) join(path, rest string) (string, bool) {
	if strings.HasPrefix(rest, "/") {
		path, rest = "/", rest[1:]
	}
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		switch name {
		case "", ".":
			continue
		case "..":
			if path == "" {
				path = ".."
				continue
			}
			var base string
			if path, base = pySplit(path); base == ".." {
				path = pyJoin(pyJoin(path, ".."), "..")
			}
			continue
		}
		next := pyJoin(path, name)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			path = next
			continue
		}
		if v, ok := r.seen[next]; ok {
			if v.done {
				path = v.path
				continue
			}
			return pyJoin(next, rest), false // a loop
		}
		target, err := os.Readlink(next)
		if err != nil {
			// Gone since the Lstat: what is there now is no link.
			path = next
			continue
		}
		r.seen[next] = resolved{}
		var ok bool
		if path, ok = r.join(path, target); !ok {
			return pyJoin(path, rest), false
		}
		r.seen[next] = resolved{path: path, done: true}
	}
	return path, true
}

// pyJoin is posixpath.join of two: b replaces a when absolute, and no
// separator is doubled.
func pyJoin(a, b string) string {
	switch {
	case strings.HasPrefix(b, "/"):
		return b
	case a == "" || strings.HasSuffix(a, "/"):
		return a + b
	}
	return a + "/" + b
}

// pySplit is posixpath.split: the head (without trailing separators,
// unless it is all separators) and the last component.
func pySplit(p string) (head, tail string) {
	i := strings.LastIndexByte(p, '/') + 1
	head, tail = p[:i], p[i:]
	if strings.Trim(head, "/") != "" {
		head = strings.TrimRight(head, "/")
	}
	return head, tail
}
