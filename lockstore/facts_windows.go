package lockstore

import (
	"errors"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// probeHeld opens path as gateway.lock is opened, refusing a reparse
// point (LockFileEx needs a handle with read or write access), tries the
// lock and lets go of it.
func probeHeld(path string) (bool, error) {
	f, err := safefs.OpenLockFile(path, false)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := safefs.LockFile(f); err != nil {
		if errors.Is(err, safefs.ErrLocked) {
			return true, nil
		}
		return false, err
	}
	return false, safefs.UnlockFile(f)
}

// expandable: ntpath.expanduser (USERPROFILE, HOMEDRIVE and HOMEPATH,
// "~name" as a sibling of one's own home) is not reproduced; a recorded
// home starting with "~" is taken to match, which keeps more, never less.
func expandable(p string) bool { return !strings.HasPrefix(p, "~") }
