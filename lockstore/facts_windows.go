package lockstore

import (
	"os"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// openProbe opens path as gateway.lock is opened, refusing a reparse
// point; LockFileEx needs a handle with read or write access.
func openProbe(path string) (*os.File, error) { return safefs.OpenLockFile(path, false) }

// expandable: ntpath.expanduser (USERPROFILE, HOMEDRIVE and HOMEPATH,
// "~name" as a sibling of one's own home) is not reproduced; a recorded
// home starting with "~" is taken to match, which keeps more, never less.
func expandable(p string) bool { return !strings.HasPrefix(p, "~") }
