package lockstore

import "path/filepath"

// canonical resolves symbolic links where it can, as Python's
// Path.resolve(strict=False) does; a path that does not resolve is only
// cleaned.
func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
