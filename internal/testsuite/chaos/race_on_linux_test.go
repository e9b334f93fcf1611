//go:build race

package chaos

// raceBuild makes the supervisor under test race-enabled when the suite is:
// chaos is where its goroutines meet the most interleavings.
const raceBuild = true
