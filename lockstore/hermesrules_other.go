//go:build !linux

package lockstore

// hermesSeesStopped: Hermes reads the stopped state from
// /proc/<pid>/status, which this OS lacks, so a stopped owner keeps its
// scoped locks, as in Hermes.
const hermesSeesStopped = false
