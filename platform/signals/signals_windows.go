package signals

import (
	"os"
	"syscall"
)

// dump reports false: Windows has no signal that asks Hermes for its
// stacks.
func dump() (os.Signal, bool) { return nil, false }

// ignored returns nothing on Windows: a broken pipe is an error
// there, never a signal.
func ignored() []os.Signal { return nil }

// shutdown returns the signals that ask a supervisor to stop.
//
// Go delivers the console's close, logoff and shutdown events as SIGTERM;
// unhandled, they end the process at once and its job object kills the
// gateway hard, so a foreground `run` whose console closes stops it with
// the planned-stop marker instead, in the few seconds Windows allows.
func shutdown() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// restart reports that Windows has no restart signal.
func restart() (os.Signal, bool) { return nil, false }

// reload reports that Windows has no reload signal.
func reload() (os.Signal, bool) { return nil, false }

// terminate reports that Windows has no graceful stop signal: the
// gateway ignores console events when detached, so the planned-stop marker
// is the request.
func terminate() (os.Signal, bool) { return nil, false }
