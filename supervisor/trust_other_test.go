//go:build !linux

package supervisor

// testHelper has no helper processes to run here: the trust tests that
// need sentinels read /proc and run on Linux.
func testHelper([]string) {}
