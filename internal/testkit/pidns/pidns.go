// Package pidns runs a package's tests as PID 1 of a private PID and mount
// namespace, where pids can be handed out deterministically; tests use it
// to make an unrelated process take a recorded pid on purpose.
package pidns
