package main

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// evilName is a lock file name that clears the screen and forges a line
// of its own in an error that embeds it.
const evilName = "/locks/x\x1b[2J\nhermes-supervisor: all files judged\r\u009b\u202e\xff.lock"

// TestPrintErrorEscapes prints errors that embed a hostile file name, one
// on its own and several as sweep lists them: no raw control reaches the
// terminal, and the name's newline makes no line.
func TestPrintErrorEscapes(t *testing.T) {
	one := &lockstore.FileError{Path: evilName, Op: "remove", Err: fs.ErrPermission}
	tests := []struct {
		name  string
		err   error
		lines int
	}{
		{"plain error", one, 1},
		{"one sweep failure", sweepFailures(errors.Join(one)), 1},
		{"three sweep failures", sweepFailures(errors.Join(one, one, one)), 4},
		{"exit error", &exitError{code: 1, err: sweepFailures(errors.Join(one, nil, one))}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printError(&b, tt.err)
			out := b.String()
			for i, r := range out {
				if r != '\n' && ((r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd")) || !strconv.IsGraphic(r)) {
					t.Errorf("raw %U at %d in %q", r, i, out)
				}
			}
			if n := strings.Count(out, "\n"); n != tt.lines {
				t.Errorf("%d lines, want %d:\n%s", n, tt.lines, out)
			}
			if !strings.Contains(out, strconv.QuoteToGraphic(evilName)+": remove: permission denied") {
				t.Errorf("the name's escapes are not shown:\n%s", out)
			}
			if !errors.Is(tt.err, fs.ErrPermission) {
				t.Errorf("the error no longer matches its cause")
			}
		})
	}
}
