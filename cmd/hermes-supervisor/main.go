// Go 1.25+ re-reads the cgroup CPU limit about once a second while its
// sysmon thread is awake, to follow a changed limit with GOMAXPROCS. A
// supervisor is idle nearly all its life, and its idle cost is what it is
// judged by (docs/benchmarks.md §4 and §6): each wake-up of sysmon, for a
// runtime timer or a restart, then also costs a file read and a
// sched_getaffinity. GOMAXPROCS is still taken from the limit at start; a
// limit changed later is followed at the next restart of the service.
//go:debug updatemaxprocs=0

// Command hermes-supervisor supervises the Hermes gateway: it owns the
// gateway as its child, clears stale pid and lock files before every start
// and restarts it with backoff.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

func main() {
	os.Exit(Main(os.Args[1:]))
}

// exitError carries a specific exit status (LSB status codes) out of cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// Main runs the CLI with args and returns the process exit status.
func Main(args []string) int {
	root := newRoot(os.Getenv)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(os.Stderr, ee.err)
		}
		return ee.code
	}
	printError(os.Stderr, err)
	return 1
}

// printError writes err for a terminal. Its text may embed a file's name
// or contents: each of its lines passes through termtext.Line, so no
// control character reaches the terminal. An error whose text spans lines
// by design escapes what it embeds itself (see sweepFailures), so that a
// newline in a name cannot forge a line of it.
func printError(w io.Writer, err error) {
	var b strings.Builder
	b.WriteString("hermes-supervisor: ")
	for line := range strings.Lines(err.Error()) {
		body, nl := strings.CutSuffix(line, "\n")
		b.WriteString(termtext.Line(body))
		if nl {
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	_, _ = io.WriteString(w, b.String())
}
