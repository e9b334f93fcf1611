package lockstore

// hermesSeesStopped: Hermes reads the stopped state (T/t) from
// /proc/<pid>/status, so only on Linux does a stopped owner make a scoped
// lock stale.
const hermesSeesStopped = true

// hermesStripsCmdline: Hermes reads /proc/<pid>/cmdline first, decoded and
// stripped, so a command line of white space or bytes that are not UTF-8
// reads as "", which _record_matches_live_gateway_pid takes for
// unreadable. Elsewhere it reads ps, then psutil's argv joined unstripped.
const hermesStripsCmdline = true
