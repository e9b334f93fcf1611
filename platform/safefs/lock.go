package safefs

import (
	"errors"
	"os"
)

// ErrLocked reports that another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// LockFile takes Hermes' exclusive, non-blocking gateway lock on f: flock
// on Unix; on Windows one byte at offset 1,048,576, as msvcrt.locking
// does. A lock another process holds gives an error wrapping ErrLocked.
func LockFile(f *os.File) error { return lockFile(f) }

// UnlockFile releases the lock taken by LockFile.
func UnlockFile(f *os.File) error { return unlockFile(f) }
