// Package pidns runs a package's tests as PID 1 of a private PID and mount
// namespace, where pids can be handed out deterministically; tests use it
// to make an unrelated process take a recorded pid on purpose. Only Linux
// has PID namespaces: elsewhere the tests run as they are, Available
// reports false, and what needs the namespace returns an error wrapping
// errors.ErrUnsupported.
package pidns

import (
	"os/exec"
	"testing"
)

// Signalled is the exit code of a bystander that received any catchable
// signal: a test that sees it knows the supervisor signalled a process it
// must never touch.
const Signalled = 42

// Main is called from TestMain. Outside the namespace it re-executes the
// test binary inside a new PID and mount namespace (and a user namespace
// when not root) and exits with its status; inside, it mounts a private
// /proc and runs the tests. If no namespace can be made, the tests run
// here and Available reports false.
func Main(m *testing.M) { runMain(m) }

// Available reports whether the tests run inside a private PID namespace.
func Available() bool { return available() }

// Why says why the namespace is not available.
func Why() string { return whyNot() }

// StartAt starts cmd so that its process gets exactly pid, by writing
// pid-1 to ns_last_pid under flock (the CRIU convention).
func StartAt(cmd *exec.Cmd, pid int) error { return startAt(cmd, pid) }

// Bystander is the body of an unrelated process that happens to get a
// recorded pid: it exits 0 when its stdin closes and Signalled on any
// catchable signal. It never returns. Once it records signals it writes
// bystanderReady to stdout (see StartBystander).
func Bystander() { bystander() }

// StartBystander starts cmd, a Bystander, at pid (see StartAt) and returns
// once it runs and records signals. Before that, its command line reads
// empty and a signal would meet its default action: a test that judged or
// signalled it earlier would test the kernel's exec, not the supervisor.
func StartBystander(cmd *exec.Cmd, pid int) error { return startBystander(cmd, pid) }
