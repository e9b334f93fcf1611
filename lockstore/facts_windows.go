package lockstore

import "strings"

// probeHeld opens path as gateway.lock is opened, refusing a reparse
// point (LockFileEx needs a handle with read or write access), tries the
// lock and lets go of it. An absent file is not held, as fileHeld, its
// only caller, takes it.
func probeHeld(path string) (bool, error) { return fileLocked(path) }

// expandable: ntpath.expanduser (USERPROFILE, HOMEDRIVE and HOMEPATH,
// "~name" as a sibling of one's own home) is not reproduced; a recorded
// home starting with "~" is taken to match, which keeps more, never less.
func expandable(p string) bool { return !strings.HasPrefix(p, "~") }
