//go:build !linux

// Command bench measures hermes-supervisor; it reads /proc and runs Linux
// peers (runit, s6, supervisord), so it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: runs on Linux only")
	os.Exit(1)
}
