package safefs

import (
	"errors"
)

// ErrLocked reports that another process holds the lock.
var ErrLocked = errors.New("locked by another process")
