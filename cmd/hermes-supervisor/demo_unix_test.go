//go:build unix

package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// A demo program without an exec bit is not run: the subcommand is.
func TestDemoCommandBesideNotExecutable(t *testing.T) {
	dir := testdir.New(t)
	exe := filepath.Join(dir, "hermes-supervisor")
	writeFile(t, exe, 0o755)
	writeFile(t, filepath.Join(dir, demoGatewayProgram), 0o644)
	if got, want := demoCommandBeside(exe), []string{exe, "demo-gateway"}; !slices.Equal(got, want) {
		t.Fatalf("demoCommandBeside = %q, want %q", got, want)
	}
}
