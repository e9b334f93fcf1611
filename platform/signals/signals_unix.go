//go:build unix

package signals

import (
	"os"

	"golang.org/x/sys/unix"
)

// Dump is the signal on which Hermes appends every thread's stack to
// logs/gateway_faulthandler.log and keeps running.
func Dump() (os.Signal, bool) { return unix.SIGUSR2, true }

// Ignored returns the signals a supervisor must not die of: SIGPIPE,
// which a write to a log pipe whose reader died would otherwise deliver.
func Ignored() []os.Signal { return []os.Signal{unix.SIGPIPE} }

// Shutdown returns the signals that ask a supervisor to stop.
func Shutdown() []os.Signal { return []os.Signal{unix.SIGTERM, unix.SIGINT} }

// Restart returns the signal that asks a Hermes gateway to restart.
func Restart() (os.Signal, bool) { return unix.SIGUSR1, true }

// Reload returns the signal on which the supervisor restarts its child.
func Reload() (os.Signal, bool) { return unix.SIGHUP, true }

// Terminate returns the gateway's stop signal.
func Terminate() (os.Signal, bool) { return unix.SIGTERM, true }
