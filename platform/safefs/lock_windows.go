package safefs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// hermesLockOffset is where Hermes' msvcrt.locking takes its 1-byte lock.
const hermesLockOffset = 1 << 20

// lockFile takes Hermes' exclusive, non-blocking gateway lock on f: one
// byte at offset 1,048,576, as msvcrt.locking does.
func lockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: hermesLockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return fmt.Errorf("lock %s: %w", f.Name(), ErrLocked)
	}
	return fmt.Errorf("lock %s: %w", f.Name(), err)
}

// unlockFile releases the lock taken by LockFile.
func unlockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: hermesLockOffset}
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}
