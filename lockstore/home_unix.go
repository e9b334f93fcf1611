//go:build !windows

package lockstore

// sameHome compares two Hermes homes as Hermes' _same_hermes_home does on
// POSIX: canonical paths, case-sensitive.
func sameHome(a, b string) bool { return canonical(a) == canonical(b) }
