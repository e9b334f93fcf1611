package lockstore

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// sameHome compares two Hermes homes as Hermes' _same_hermes_home does on
// Windows, where os.path.normcase folds case (homesFoldEqual). unknown
// says why Hermes' answer is not known here, when it is not: one home
// leads into a loop of links, on which Python 3.11 and 3.12's resolve()
// raise (see canonical), or one has a drive and the other none.
func sameHome(a, b string) (same bool, unknown string) {
	if (filepath.VolumeName(a) == "") != (filepath.VolumeName(b) == "") {
		// Python puts a rooted path without a drive on the current
		// drive of the Hermes process reading it, which is not known
		// here (a gateway runs in its home, a hermes command wherever
		// its shell was), and neither is ours. Two without one are on
		// the same drive.
		return false, "its hermes_home or this home has no drive, which Hermes' resolve() takes from the current drive of the Hermes process reading it, not known here"
	}
	ca, loopA := canonical(a)
	cb, loopB := canonical(b)
	if unknown := raisesOn(loopA || loopB); unknown != "" {
		return false, unknown
	}
	return homesFoldEqual(ca, cb) || sameDir(ca, cb), ""
}

// sameDir reports two paths that both name one existing directory. Python's
// realpath asks Windows for each path's final name
// (GetFinalPathNameByHandle), which sees through what EvalSymlinks leaves
// as it is: a junction (Go 1.23 on), a drive made by subst, a mapped
// network drive. One folder is one final name, so such spellings are one
// home to Hermes, and judging them two would make a live gateway's records
// another home's, and stale.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// canonical resolves symbolic links where it can, as Python's
// Path.resolve(strict=False) does on Windows (ntpath.realpath): it
// normalizes ".." lexically first, as Windows itself does, then follows
// links; a path that does not resolve is only cleaned. looped: what it
// gives still leads into a loop of links, which Python 3.11 and 3.12's
// resolve() stat after realpath and raise RuntimeError on
// (ERROR_CANT_RESOLVE_FILENAME); 3.13 and later do not, and read the path
// as realpath gives it. Where the two differ, the reading that decides
// nothing keeps more.
func canonical(p string) (out string, looped bool) {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, false
	}
	_, err := os.Stat(p)
	return p, isLinkLoop(err)
}

// isLinkLoop reports the error Windows gives for a path that leads into a
// loop of links, which 3.11's pathlib tests for (its
// _WINERROR_CANT_RESOLVE_FILENAME) and turns into RuntimeError. Wine
// shows a loop as a missing file, so only real Windows gives it.
func isLinkLoop(err error) bool { return errors.Is(err, windows.ERROR_CANT_RESOLVE_FILENAME) }
