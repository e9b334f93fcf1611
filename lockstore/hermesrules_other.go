//go:build !linux

package lockstore

// hermesSeesStopped: Hermes reads the stopped state from
// /proc/<pid>/status, which this OS lacks, so a stopped owner keeps its
// scoped locks, as in Hermes.
const hermesSeesStopped = false

// hermesStripsCmdline: without /proc, Hermes falls back from a blank ps
// line to psutil's argv joined with spaces, unstripped: a blank command
// line is read, and is no gateway's.
const hermesStripsCmdline = false
