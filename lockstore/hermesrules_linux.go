package lockstore

// hermesSeesStopped: Hermes reads the stopped state (T/t) from
// /proc/<pid>/status, so only on Linux does a stopped owner make a scoped
// lock stale.
const hermesSeesStopped = true
