package lockstore

import "path/filepath"

// sameHome compares two Hermes homes as Hermes' _same_hermes_home does on
// Windows, where os.path.normcase folds case (homesFoldEqual). raises is
// always false here: see canonical.
func sameHome(a, b string) (same, raises bool) {
	return homesFoldEqual(canonical(a), canonical(b)), false
}

// canonical resolves symbolic links where it can, as Python's
// Path.resolve(strict=False) does on Windows (ntpath.realpath): it
// normalizes ".." lexically first, as Windows itself does, then follows
// links; a path that does not resolve is only cleaned.
func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
