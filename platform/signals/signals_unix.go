//go:build unix

package signals

import (
	"os"

	"golang.org/x/sys/unix"
)

// dump is the signal on which Hermes appends every thread's stack to
// logs/gateway_faulthandler.log and keeps running.
func dump() (os.Signal, bool) { return unix.SIGUSR2, true }

// ignored returns the signals a supervisor must not die of: SIGPIPE,
// which a write to a log pipe whose reader died would otherwise deliver.
func ignored() []os.Signal { return []os.Signal{unix.SIGPIPE} }

// shutdown returns the signals that ask a supervisor to stop.
func shutdown() []os.Signal { return []os.Signal{unix.SIGTERM, unix.SIGINT} }

// restart returns the signal that asks a Hermes gateway to restart.
func restart() (os.Signal, bool) { return unix.SIGUSR1, true }

// reload returns the signal on which the supervisor restarts its child.
func reload() (os.Signal, bool) { return unix.SIGHUP, true }

// terminate returns the gateway's stop signal.
func terminate() (os.Signal, bool) { return unix.SIGTERM, true }
