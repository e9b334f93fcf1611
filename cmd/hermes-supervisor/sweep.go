package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

func newSweepCmd(g *globals) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "sweep [--dry-run] [--json]",
		Short: "Judge every pid and lock file and remove the stale ones",
		Long: `Sweep judges gateway.pid, gateway.lock, gateway_state.json, Hermes' markers and
every *.lock in the lock directory by the rules of Hermes' own code, and removes
a file only when Hermes would (gateway.pid also when gateway.lock is not held).
Files of a live gateway, files whose owner wrote them itself, and files that
cannot be judged, are kept. Corrupt files older than a
few seconds are moved aside to <name>.corrupt. --dry-run changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			layout, err := g.layout()
			if err != nil {
				return err
			}
			// The table (or JSON) is the report: a log line per file on
			// stderr would only say each row twice.
			log := zap.NewNop()
			if !dryRun {
				// Removing files where another user may write, or through
				// their link, would let them choose what we remove. The
				// sweep opens the dirs again the same way; this only says
				// so before judging anything.
				for _, d := range []struct{ path, flag string }{{layout.Home, "--home"}, {layout.LockDir, "--lock-dir"}} {
					r, _, err := safefs.OpenDir(d.path, false)
					switch {
					case errors.Is(err, safefs.ErrUnsafeDir):
						return &exitError{code: exitConfig, err: fmt.Errorf("%w: sweep as the directory's owner, pass %s to its real path, or use --dry-run", err, d.flag)}
					case err == nil:
						r.Close()
					}
				}
			}
			store := lockstore.New(layout, procstate.NewProber(procstate.Options{StartTolerance: -1}), log, time.Now)
			// The command a supervisor of this home runs counts as a
			// gateway here too, as it does in that supervisor's sweeps.
			if st, err := supervisor.ReadStatusFile(layout.SupervisorState()); err == nil && st.Child != nil {
				store.WithGatewayCommand(st.Child.Argv)
			}
			entries, sweepErr := store.Sweep(cmd.Context(), dryRun)
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, entries); err != nil {
					return err
				}
			} else {
				// File names and what was read from the files are the
				// attacker's: each cell is escaped, which also keeps a
				// tab or newline in one from shifting the table.
				q := termtext.Quote
				// Buffered: tabwriter writes each cell on its own, twelve
				// writes a row, 1.2 million at 100 000 files.
				bw := bufio.NewWriter(out)
				tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PATH\tKIND\tPID\tVERDICT\tACTION\tREASON")
				for _, e := range entries {
					pid := "-"
					if e.Record != nil {
						pid = fmt.Sprint(e.Record.PID)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", q(e.Path), q(string(e.Kind)), pid, q(e.Verdict.String()), q(string(e.Action)), q(e.Reason))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if err := bw.Flush(); err != nil {
					return err
				}
				if len(entries) == 0 {
					fmt.Fprintf(out, "nothing to judge in %s or %s\n", q(layout.Home), q(layout.LockDir))
				}
			}
			if sweepErr != nil {
				return &exitError{code: 1, err: sweepFailures(sweepErr)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "judge and report, change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdicts as JSON")
	return cmd
}

// sweepFailures lists each file the sweep could not judge or change once,
// one per line under a count. A file's name or contents in an error are
// escaped here, one error at a time: a newline in a name must not make a
// line of its own.
func sweepFailures(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) <= 1 {
		return oneLine{err}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d files could not be judged or changed (kept as they are):", len(errs))
	for _, e := range errs {
		b.WriteString("\n  ")
		b.WriteString(termtext.Line(e.Error()))
	}
	return fmt.Errorf("%s%w", b.String(), noText{err})
}

// oneLine is err with its text escaped into one line.
type oneLine struct{ err error }

func (o oneLine) Error() string { return termtext.Line(o.err.Error()) }
func (o oneLine) Unwrap() error { return o.err }

// noText keeps err matchable with errors.Is and As without repeating it.
type noText struct{ err error }

func (n noText) Error() string { return "" }
func (n noText) Unwrap() error { return n.err }
