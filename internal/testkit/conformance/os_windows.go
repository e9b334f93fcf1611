package conformance

import "errors"

const (
	exeSuffix = ".exe"
	// hasSignals: Windows has neither stopped processes nor zombies.
	hasSignals = false
)

func stop(int) error { return errors.ErrUnsupported }

func resume(int) {}

// canUnlinkOpen: a file some process holds open cannot be unlinked (sharing violation).
const canUnlinkOpen = false
