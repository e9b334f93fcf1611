package safefs

import "os"

// Under `sudo hermes-supervisor install --system --migrate` the supervisor
// runs as root and stops the gateway of a home that belongs to the user the
// service will run as: a path that user can change, by swapping a link in
// it between the moment the gateway is judged and the moment a file is
// written, must not become a root-owned file in a directory of their
// choosing.

// ActsFor reports whether this process has rights the user uid lacks and
// so must judge their paths for them before it writes there: root acting
// for another user. Never on Windows, whose processes have no uid.
func ActsFor(uid int) bool { return actsFor(uid) }

// WriteFileFor atomically replaces name in the directory dir with data, as
// a process that ActsFor the user uid. dir is opened as OpenDir opens it,
// but judged for uid: only uid's and root's files may shape the path, no
// group is trusted, and dir itself must be uid's. The new file is made in
// the directory opened, owned by uid and the directory's group, and
// renamed into place there, so no link the user could swap is followed
// and the file lands nowhere uid could not have written it.
func WriteFileFor(dir, name string, data []byte, perm os.FileMode, uid int) error {
	return writeFileFor(dir, name, data, perm, uid)
}

// MkdirFor makes dir, mode 0700, owned by the user uid, as a process that
// ActsFor uid: its parent is opened as WriteFileFor opens a directory, so
// it must be uid's, reached through nothing another user could change.
// A dir that exists must be a directory of uid's, not a link, and is left
// as it is; the one it makes is given to uid through a descriptor, so
// that uid swapping it meanwhile (a hard link to root's file) gives them
// nothing else. It is how root makes a directory the user's own program will
// write in (the log directory of sudo install --system on macOS), which
// mkdir -p as root would leave root's.
func MkdirFor(dir string, uid int) error { return mkdirFor(dir, uid) }
