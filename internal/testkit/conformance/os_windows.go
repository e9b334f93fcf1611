package conformance

import "errors"

const (
	exeSuffix = ".exe"
	// hasSignals: Windows has neither stopped processes nor zombies.
	hasSignals = false
	// isUnix: a command line is one string the reader splits again, and
	// ".." is removed before links are followed.
	isUnix = false
)

func stop(int) error { return errors.ErrUnsupported }

func resume(int) {}

// canUnlinkOpen: a file some process holds open cannot be unlinked (sharing violation).
const canUnlinkOpen = false
