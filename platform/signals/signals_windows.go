package signals

import (
	"os"
	"syscall"
)

// Dump reports false: Windows has no signal that asks Hermes for its
// stacks.
func Dump() (os.Signal, bool) { return nil, false }

// Ignored returns nothing on Windows: a broken pipe is an error
// there, never a signal.
func Ignored() []os.Signal { return nil }

// Shutdown returns the signals that ask a supervisor to stop.
//
// Go delivers the console's close, logoff and shutdown events as SIGTERM;
// unhandled, they end the process at once and its job object kills the
// gateway hard, so a foreground `run` whose console closes stops it with
// the planned-stop marker instead, in the few seconds Windows allows.
func Shutdown() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// Restart reports that Windows has no restart signal.
func Restart() (os.Signal, bool) { return nil, false }

// Reload reports that Windows has no reload signal.
func Reload() (os.Signal, bool) { return nil, false }

// Terminate reports that Windows has no graceful stop signal: the
// gateway ignores console events when detached, so the planned-stop marker
// is the request.
func Terminate() (os.Signal, bool) { return nil, false }
