package signals

import (
	"os"
	"syscall"
)

// Ignored returns the signals a supervisor must not die of: SIGPIPE on
// Unix, which a write to a log pipe whose reader died would otherwise
// deliver; none on Windows, where a broken pipe is an error.
func Ignored() []os.Signal { return ignored() }

// Shutdown returns the signals that ask a supervisor to stop: SIGTERM and
// SIGINT, and on Windows the console's close, logoff and shutdown events,
// which Go delivers as SIGTERM.
func Shutdown() []os.Signal { return shutdown() }

// Restart returns the signal that asks a Hermes gateway to restart
// (SIGUSR1), or false where there is none (Windows).
func Restart() (os.Signal, bool) { return restart() }

// Reload returns the signal on which the supervisor restarts its child
// (SIGHUP), or false where there is none (Windows).
func Reload() (os.Signal, bool) { return reload() }

// Terminate returns the gateway's stop signal (SIGTERM), or false where
// there is none: on Windows the gateway ignores console events when
// detached, so the planned-stop marker is the request.
func Terminate() (os.Signal, bool) { return terminate() }

// Dump returns the signal on which Hermes appends every thread's stack to
// logs/gateway_faulthandler.log and keeps running (SIGUSR2), or false
// where there is none (Windows).
func Dump() (os.Signal, bool) { return dump() }

// Name returns the conventional name of sig ("SIGKILL"), which operators
// search for, rather than its description ("killed").
func Name(sig syscall.Signal) string { return name(sig) }
