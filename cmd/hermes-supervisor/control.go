package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// LSB status exit codes.
const (
	statusRunning    = 0
	statusNotRunning = 3
	statusUnknown    = 4
)

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON, all bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status [--json] [--all]",
		Short: "Show the supervisor's state (exit 0 running, 3 not running, 4 unknown)",
		Long: `Status asks the running supervisor over its control endpoint and, when none
answers, reads the state file the last supervisor left in the Hermes home.

Exit status follows LSB: 0 when a supervisor is keeping the gateway up
(starting, running, backoff, stopping), 3 when none runs or it is stopped or
failed, 4 when the state cannot be determined (also for a usage error), as
when the supervisor process itself is stopped (Ctrl-Z, SIGSTOP): alive, but
unable to answer until it gets SIGCONT.

With --all it shows every home under the root (the root home and each
profile in <root>/profiles) in one table: its supervisor's state, what Hermes
would say of its gateway (running, served by the multiplexer, stopped,
parked, deleted), its service definition and its last exit; the exit status
is the worst of them.`,
		// A usage error is "status unknown" too: LSB gives status's 1 the
		// meaning "dead, pid file exists".
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return &exitError{code: statusUnknown, err: err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			layout, err := g.layout()
			if err != nil {
				return &exitError{code: statusUnknown, err: err}
			}
			if all {
				rows, code := statusAll(cmd.Context(), layout, timeout)
				sortRows(rows)
				if asJSON {
					err = writeJSON(cmd.OutOrStdout(), rows)
				} else {
					err = writeStatusAll(cmd.OutOrStdout(), rows)
				}
				if err != nil || code == statusRunning {
					return err
				}
				return &exitError{code: code}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			st, err := supervisor.QueryStatus(ctx, layout)
			switch {
			case errors.Is(err, supervisor.ErrNoHome):
				return &exitError{code: statusNotRunning, err: err}
			case err != nil:
				return &exitError{code: statusUnknown, err: err}
			}
			if err := printStatus(cmd.OutOrStdout(), st, asJSON); err != nil {
				return err
			}
			// A profile another gateway serves runs, with no supervisor
			// of its own: running, as status --all says.
			if st.Up() || st.ServedBy != nil {
				return nil
			}
			return &exitError{code: statusNotRunning}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: statusUnknown, err: err}
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "show every Hermes home under the root: the root home and each profile")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the supervisor's answer (with --all: each supervisor's)")
	return cmd
}

func printStatus(w io.Writer, st *supervisor.Status, asJSON bool) error {
	if asJSON {
		return writeJSON(w, st)
	}
	return st.WriteText(w, time.Now())
}

// writeJSON prints v as indented JSON whose every line passes through
// termtext.Line: encoding/json escapes C0 controls and U+2028/U+2029 but
// writes C1 controls and bidi overrides raw, which a terminal acts on. The
// escapes it adds are JSON's own, so every value parses back unchanged.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		body, nl := strings.CutSuffix(line, "\n")
		out.WriteString(termtext.Line(body))
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

func newStopCmd(g *globals) *cobra.Command {
	f := &serviceFlags{}
	cmd := &cobra.Command{
		Use:   "stop [--user|--system]",
		Short: "Stop the gateway and the supervisor (waits until both are down)",
		Long: `Stop stops the installed service of this home through its service manager
when there is one this user may control (pass --user or --system when both are
installed), and otherwise asks the supervisor over its control endpoint.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			timeout := f.stopWait
			if err := checkWait(timeout); err != nil {
				return err
			}
			if done, err := stopService(cmd, g, f); done || err != nil {
				return err
			}
			if f.dryRun {
				layout, err := g.layout()
				if err != nil {
					return err
				}
				// What the stop would do: refuse a stopped supervisor at
				// once, not ask it how long and plan a wait it never gets.
				if err := supervisor.NotStopped(cmd.Context(), layout); err != nil {
					return fmt.Errorf("stop: %w", err)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "ask the supervisor at %s to stop, and %s\n",
					termtext.Quote(ctlsock.Address(layout.Home)), supervisor.PlanStopWait(cmd.Context(), layout.Home, timeout))
				return err
			}
			return control(cmd, g, "stop", timeout, func(err error) error {
				fmt.Fprintln(cmd.OutOrStdout(), "not running")
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&f.stopWait, "timeout", 0, waitHelp("stop"))
	f.register(cmd, false, false)
	return cmd
}

func newRestartCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Restart the gateway (also leaves the failed state)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkWait(timeout); err != nil {
				return err
			}
			return control(cmd, g, "restart", timeout, func(err error) error {
				return &exitError{code: statusNotRunning, err: fmt.Errorf("no supervisor is running: start one with `hermes-supervisor run`")}
			})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, waitHelp("restart"))
	return cmd
}

// control sends verb to the running supervisor; notRunning decides what
// "nobody listens" means for that verb.
func control(cmd *cobra.Command, g *globals, verb string, timeout time.Duration, notRunning func(error) error) error {
	layout, err := g.layout()
	if err != nil {
		return err
	}
	if err := supervisor.NotStopped(cmd.Context(), layout); err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	plan := supervisor.PlanStopWait(cmd.Context(), layout.Home, timeout)
	begun := time.Now()
	ctx, cancel := plan.Context(cmd.Context(), supervisor.AskHome(layout.Home))
	defer cancel()
	waited := func() string {
		if plan.Fixed > 0 {
			return plan.Fixed.String()
		}
		return time.Since(begun).Round(time.Second).String()
	}
	resp, err := supervisor.CallHome(ctx, layout.Home, verb)
	switch {
	case errors.Is(err, ctlsock.ErrNoEndpoint):
		if err := unreachable(cmd.Context(), layout, verb, err); err != nil {
			return err
		}
		return notRunning(err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%s: permission denied on the control endpoint: run as the user the supervisor runs as", verb)
	case err != nil && supervisor.WaitOver(ctx):
		return stillRunning(cmd.Context(), layout, verb, waited())
	case err != nil:
		return err
	case !resp.OK:
		return fmt.Errorf("%s: %s", verb, termtext.Quote(resp.Error))
	}
	if resp.Status != nil {
		if verb == "stop" {
			// The answer comes just before the supervisor exits; stop
			// returns once it has, as `systemctl stop` does.
			if err := supervisor.AwaitSupervisorExit(ctx, resp.Status); err != nil {
				if supervisor.WaitOver(ctx) {
					err = supervisor.ErrWaitOver
				}
				return fmt.Errorf("stop: the gateway is %s, but the supervisor (pid %d) has not exited within %s: %w; check with `hermes-supervisor status`",
					termtext.Quote(string(resp.Status.State)), resp.Status.Supervisor.PID, waited(), err)
			}
		}
		if verb == "restart" && (resp.Status.State == supervisor.Served || resp.Status.State == supervisor.Parked) {
			return heldBack(cmd.OutOrStdout(), resp.Status)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", verb, termtext.Quote(string(resp.Status.State)))
		return unkilled(verb, resp.Status)
	}
	return nil
}

// unreachable refuses to call a supervisor gone that no endpoint answered
// for while the state file it keeps names it alive (a supervisor of a
// version that listens elsewhere, or whose socket was removed): "not
// running" would be a lie that scripts act on.
func unreachable(ctx context.Context, layout lockstore.Layout, verb string, callErr error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := supervisor.QueryStatus(ctx, layout)
	if err != nil || st.Source != "state-file" || !st.Up() {
		return nil
	}
	return fmt.Errorf("%s: %w, yet the supervisor of this home, pid %d, runs: stop it through the service manager that started it, "+
		"or end that process (SIGTERM stops it cleanly)", verb, callErr, st.Supervisor.PID)
}

// stillRunning explains a stop or restart that did not finish within the
// client's wait (--timeout, or the supervisor's stop budget): what still
// runs, and what to do about it.
func stillRunning(ctx context.Context, layout lockstore.Layout, verb string, waited string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	what := "the supervisor has not finished"
	when := "once its --stop-timeout passes (extended by the gateway's EXTEND_TIMEOUT_USEC, by at most its --max-stop-extension)"
	if st, qerr := supervisor.QueryStatus(ctx, layout); qerr == nil {
		what = fmt.Sprintf("the supervisor (pid %d) is %s", st.Supervisor.PID, termtext.Quote(string(st.State)))
		if st.Child != nil {
			what += fmt.Sprintf(" and the gateway (pid %d) still runs", st.Child.PID)
			if k := st.Child.KillAt; k != nil {
				// The deadline the supervisor keeps, extensions included.
				when = fmt.Sprintf("at %s (in %s)", k.Local().Format(time.TimeOnly), max(time.Until(*k), 0).Round(time.Second))
			}
		}
	}
	return fmt.Errorf("%s: not done after %s (%w): %s; it kills the gateway's process tree %s, "+
		"so wait and check with `hermes-supervisor status`, or run %s again with a longer --timeout", verb, waited, context.DeadlineExceeded, what, when, verb)
}

// heldBack reports a restart the supervisor could not make because its
// gateway is held back, with status's exit code for that state: served
// is running (another gateway serves the profile), parked is not.
func heldBack(w io.Writer, st *supervisor.Status) error {
	fmt.Fprintf(w, "restart: not restarted: %s (%s)\n", termtext.Quote(string(st.State)), termtext.Quote(st.Reason))
	if st.State == supervisor.Served {
		return nil
	}
	return &exitError{code: statusNotRunning, err: fmt.Errorf("restart: nothing runs while the profile is parked: remove %s to let the gateway start",
		termtext.Quote(filepath.Join(st.Home, supervisor.ParkedFile)))}
}
