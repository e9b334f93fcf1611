//go:build !linux

package main

import (
	"fmt"
	"os"
)

// main refuses: bench reads /proc and runs Linux peers (runit, s6,
// supervisord), so it runs on Linux only.
func main() {
	fmt.Fprintln(os.Stderr, "bench: runs on Linux only")
	os.Exit(1)
}
