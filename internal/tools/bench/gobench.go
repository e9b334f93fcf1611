//go:build linux

package main

import (
	"context"
	"fmt"
	"os/exec"
)

// goBenchmarks runs the micro-benchmarks of the parsers and the identity
// check; its output is kept verbatim so benchstat can compare two runs.
func goBenchmarks(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-count", "5",
		"./lockstore", "./procstate")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	return string(out), nil
}
