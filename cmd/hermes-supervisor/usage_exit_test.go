package main

import (
	"bytes"
	"regexp"
	"testing"
)

// TestUsageExitCodes holds a usage error of status to LSB's 4 (status
// unknown): 1 means "dead, pid file exists" there, and a script reading
// status's code must not take a typo for a dead gateway. Every other
// command's usage error stays 1, as the README lists.
func TestUsageExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"status", "--bogus"}, 4},
		{[]string{"status", "--timeout", "soon"}, 4},
		{[]string{"status", "extra"}, 4},
		{[]string{"--log-level", "info", "status", "--json", "--bogus"}, 4},
		{[]string{"run", "--bogus"}, 1},
		{[]string{"install", "--bogus"}, 1},
		{[]string{"stop", "--bogus"}, 1},
		{[]string{"sweep", "--bogus"}, 1},
		{[]string{"--bogus"}, 1},
	} {
		if got := Main(c.args); got != c.want {
			t.Errorf("hermes-supervisor %q exited %d, want %d", c.args, got, c.want)
		}
	}
}

// TestHelpProfileFlag checks --help names -p's value NAME: pflag takes
// back-quoted text in a usage string for the value's name, and printed
// "-p, --profile hermes -p NAME".
func TestHelpProfileFlag(t *testing.T) {
	root := newRoot(func(string) string { return "" })
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+-p, --profile NAME\s+Hermes profile`).Match(out.Bytes()) {
		t.Errorf("--help does not show -p, --profile NAME:\n%s", out.String())
	}
}
