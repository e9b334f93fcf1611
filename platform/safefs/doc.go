// Package safefs reads, stamps, locks, renames and removes files without
// following links out of where they were found, blocking on FIFOs or
// reading more than asked.
package safefs
