package safefs

import (
	"errors"
)

// ErrUnsafeDir reports a directory that another user can write, or that
// another user owns: nothing in it can be trusted or safely created.
var ErrUnsafeDir = errors.New("directory is not private to this user")
