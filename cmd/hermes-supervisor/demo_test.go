package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestDemoCommandBeside: --demo runs the small demo program beside the
// supervisor when there is one the OS would run, and the supervisor's own
// subcommand otherwise.
func TestDemoCommandBeside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sibling func(t *testing.T, path string)
		own     bool // the sibling is what runs
	}{
		{name: "none"},
		{name: "a directory", sibling: func(t *testing.T, p string) { mkdirAll(t, p) }},
		{name: "a program", own: true, sibling: func(t *testing.T, p string) { writeFile(t, p, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testdir.New(t)
			exe := filepath.Join(dir, "hermes-supervisor.exe")
			writeFile(t, exe, 0o755)
			sibling := filepath.Join(dir, demoGatewayProgram+".exe")
			if tc.sibling != nil {
				tc.sibling(t, sibling)
			}
			want := []string{exe, "demo-gateway"}
			if tc.own {
				want = []string{sibling}
			}
			if got := demoCommandBeside(exe); !slices.Equal(got, want) {
				t.Fatalf("demoCommandBeside = %q, want %q", got, want)
			}
		})
	}
}

func writeFile(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mkdirAll(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}
