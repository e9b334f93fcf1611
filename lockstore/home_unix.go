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
// POSIX: resolved as Path.resolve(strict=False) resolves them,
// case-sensitive. Python 3.11 and 3.12 resolve as canonical does, 3.13
// and later (current Hermes runs on 3.14) as resolvedPastLoops does; the
// two differ only past a loop of links, and the homes are the same where
// either Python finds them so, which keeps more. unknown says why Hermes
// decides nothing, when it does not: resolving one meets a loop on which
// 3.11 and 3.12's resolve() raise, or links nested deeper than
// maxNestedLinks.
func sameHome(a, b string) (same bool, unknown string) {
	ca, okA, loopA := canonical(a)
	cb, okB, loopB := canonical(b)
	if ca == cb || !loopA && !loopB {
		// Without a loop of links the two readings are one: the sweep
		// resolves each path once.
		return ca == cb, raisesOn(!okA || !okB)
	}
	pa, deepA := resolvedPastLoops(a)
	pb, deepB := resolvedPastLoops(b)
	return pa == pb, raisesOn(!okA || !okB || deepA || deepB)
}

// maxNestedLinks bounds the links being followed at once, each within
// the target of the one before. Python 3.11 and 3.12's realpath recurses
// once for each, and raises RecursionError near the interpreter's limit
// of 1000 frames, less those of its caller (995 links when called at the
// top). Past this bound the path is taken for one resolve() raises on:
// it lies well inside any stack Hermes calls from, and well past the 40
// links a kernel follows, so no usable home is that deep. It bounds this
// resolver's own recursion too, where 3.13's realpath has none.
const maxNestedLinks = 100

// canonical resolves p as Python's Path.resolve(strict=False) does on
// POSIX (posixpath.realpath): component by component from the left, each
// symbolic link followed where it stands, so that a ".." after a link
// applies to where the link leads, not lexically as filepath.Clean would;
// a component that does not exist is kept as written, and a ".." after it
// removes it. At a loop of links it stops, and only normalizes the rest
// (see resolvedPastLoops for 3.13 and later); ok is false where the path
// it then gives still leads into a loop, on which Python 3.11 and 3.12's
// resolve() raise RuntimeError. A relative p stays relative: Hermes would
// resolve it against a working directory not known here. looped: it met
// a loop of links (or links nested too deep), past which 3.13 and later
// read the path otherwise.
func canonical(p string) (out string, ok, looped bool) {
	r := resolver{seen: map[string]resolved{}}
	out, ok = r.join("", pathString(p))
	if ok || r.deep {
		return out, ok, !ok
	}
	// realpath returns the path from the loop on, normalized; resolve()
	// raises only if that still meets the loop.
	out = filepath.Clean(out)
	_, err := os.Stat(out)
	return out, !errors.Is(err, syscall.ELOOP), true
}

// pathString is str(PurePosixPath(p)): empty and "." components dropped,
// ".." kept, and a root of exactly two slashes kept as POSIX allows. Hermes
// resolves the Path, so this is what realpath sees; it matters past a
// loop, where 3.11 joins the rest unresolved: <dir>/loop//x would be the
// root's /x there, and is <dir>/loop/x to Python.
func pathString(p string) string {
	root := ""
	switch {
	case strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///"):
		root = "//"
	case strings.HasPrefix(p, "/"):
		root = "/"
	}
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	if s := root + strings.Join(parts, "/"); s != "" {
		return s
	}
	return "."
}

// resolved is a link already followed: where it led, or, while it is
// being followed, done false.
type resolved struct {
	path string
	done bool
}

type resolver struct {
	seen map[string]resolved
	// pastLoops: a link found to loop is kept as it stands and the rest
	// resolved on from it, as Python 3.13 and later do.
	pastLoops bool
	// nested is how many links are being followed at once; deep is set
	// where that would pass maxNestedLinks, and join gives up.
	nested int
	deep   bool
}

// resolvedPastLoops resolves p as Python 3.13 and later's
// Path.resolve(strict=False) does (posixpath.realpath, rewritten in 3.13):
// as canonical, but a link found to loop is kept as it stands and the
// rest is resolved on from there, links and all, and no loop raises. So
// <dir>/loop/../lhome, lhome a link to the home, is the home to 3.13 and
// 3.14, and <dir>/lhome, another home, to 3.11 and 3.12. deep: it met
// links nested past maxNestedLinks, and gave up.
func resolvedPastLoops(p string) (string, bool) {
	r := resolver{seen: map[string]resolved{}, pastLoops: true}
	out, _ := r.join("", p)
	return out, r.deep
}

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
			if r.pastLoops {
				path = next
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
		if r.nested >= maxNestedLinks {
			r.deep = true
			return pyJoin(next, rest), false
		}
		r.seen[next] = resolved{}
		r.nested++
		var ok bool
		path, ok = r.join(path, target)
		r.nested--
		if !ok {
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
