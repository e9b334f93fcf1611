package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// ErrNoHome reports that the Hermes home a command was pointed at does not
// exist, so no supervisor can have run there.
var ErrNoHome = errors.New("the Hermes home does not exist")

// ErrHomeNotDir reports a Hermes home path that names something other than
// a directory.
var ErrHomeNotDir = errors.New("the Hermes home is not a directory")

// ErrSupervisorStopped reports that the supervisor of a home is stopped
// (Ctrl-Z, SIGSTOP, a debugger): alive, and holding the home, but unable
// to answer until it is continued.
var ErrSupervisorStopped = errors.New("the supervisor cannot answer")

// stoppedError says that the supervisor st names is stopped, and how to
// continue it.
func stoppedError(st *Status) error {
	return fmt.Errorf("%w: supervisor pid %d is stopped (Ctrl-Z, SIGSTOP or a debugger) and answers nothing until it gets SIGCONT: "+
		"run `fg` in its shell, or `kill -CONT %d`", ErrSupervisorStopped, st.Supervisor.PID, st.Supervisor.PID)
}

// NotStopped returns an error wrapping ErrSupervisorStopped when the
// supervisor of the home is stopped (Ctrl-Z, SIGSTOP, a debugger), else
// nil. Asked anything, such a supervisor would only use up the caller's
// wait, and would act on a stop or restart sent now whenever it got
// SIGCONT, long after its caller gave up. Its state file names it, and
// its process state says so now.
func NotStopped(ctx context.Context, layout lockstore.Layout) error {
	return notStopped(ctx, layout, procstate.NewProber(procstate.Options{StartTolerance: -1}))
}

func notStopped(ctx context.Context, layout lockstore.Layout, prober *procstate.Prober) error {
	st, err := ReadStatusFile(layout.SupervisorState())
	if err != nil {
		return nil
	}
	self, argvEqual := st.supervisorSelf()
	if prober.Liveness(ctx, self, argvEqual).Verdict == procstate.Stopped {
		return stoppedError(st)
	}
	return nil
}

// AwaitSupervisorExit waits until the supervisor st names has exited, or
// ctx ends. A supervisor answers a stop just before it exits, and until it
// has, its service manager still counts the service up (systemd:
// deactivating): a stop that returned at the answer raced whatever the
// caller did next. It only waits, never signals; a pid that no longer
// names that supervisor (start time, command line) is a supervisor gone.
// The pid is as the supervisor sees it: from another PID namespace it
// names another process here (or init, pid 1, which is never waited on),
// and there is nothing to wait for. A stopped supervisor has not exited.
func AwaitSupervisorExit(ctx context.Context, st *Status) error {
	if st == nil || st.Supervisor.PID <= 0 {
		return nil
	}
	self, argvEqual := st.supervisorSelf()
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	err := proctree.AwaitExit(ctx, self.PID, func() bool { return !prober.Liveness(ctx, self, argvEqual).Verdict.Gone() })
	switch {
	case errors.Is(err, proctree.ErrNotSame), errors.Is(err, proctree.ErrRefused):
		return nil
	case errors.Is(err, errors.ErrUnsupported):
		// No handle to wait on (macOS): its identity, looked at again.
		return prober.WaitGone(ctx, self, argvEqual, 20*time.Millisecond)
	}
	return err
}

// supervisorSelf is the identity of the supervisor st names, and the test
// of a command line that is its own: a supervisor is judged by its exact
// argv, not by whether it looks like a gateway.
func (st *Status) supervisorSelf() (procstate.Identity, func([]string) bool) {
	self := procstate.Identity{PID: st.Supervisor.PID, StartTime: st.Supervisor.StartTime, Argv: st.Supervisor.Argv}
	return self, func(argv []string) bool { return slices.Equal(argv, self.Argv) }
}

// QueryStatus asks the supervisor of the home over its control endpoint
// and, when none answers, judges the state file the last one left: its
// claims are believed only while the supervisor that wrote it is alive,
// and a gateway it names is shown as still running only when its own
// environment proves it that supervisor's (see proof). It only reads and
// never signals. A missing home wraps ErrNoHome; a home that is a file
// wraps ErrHomeNotDir.
func QueryStatus(ctx context.Context, layout lockstore.Layout) (*Status, error) {
	fi, err := os.Stat(layout.Home)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s: %w: no supervisor has run there; check --home or HERMES_HOME", layout.Home, ErrNoHome)
	case err == nil && !fi.IsDir():
		return nil, fmt.Errorf("%s is a file: %w: pass --home a directory", layout.Home, ErrHomeNotDir)
	}
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	if err := notStopped(ctx, layout, prober); err != nil {
		return nil, err
	}
	callCtx, cancel := answerContext(ctx)
	resp, err := CallHome(callCtx, layout.Home, "status")
	cancel()
	if err == nil {
		if resp.Status == nil {
			return nil, fmt.Errorf("supervisor answered without a status: %s", resp.Error)
		}
		return resp.Status, nil
	}
	// No answer, for whatever reason, is no verdict: the state file may
	// still say what the supervisor last did, and whether it lives.
	st, ferr := ReadStatusFile(layout.SupervisorState())
	switch {
	case errors.Is(ferr, ErrNoState):
		st = &Status{State: Stopped, Home: layout.Home, LockDir: layout.LockDir, Source: "none",
			Reason: "no supervisor has run for this home"}
	case ferr != nil:
		return nil, ferr
	default:
		self, argvEqual := st.supervisorSelf()
		v := prober.Liveness(ctx, self, argvEqual).Verdict
		if v == procstate.Stopped {
			// Stopped while we asked.
			return nil, stoppedError(st)
		}
		if v.Gone() {
			// The file's words are escaped where our sentence embeds
			// them: the sentence is ours, in JSON output too.
			state, reason := termtext.Quote(string(st.State)), termtext.Quote(st.Reason)
			last := fmt.Sprintf("the last one, pid %d, was %s: %s", st.Supervisor.PID, state, reason)
			if st.Up() {
				last = fmt.Sprintf("the last one, pid %d, was killed while %s", st.Supervisor.PID, state)
			}
			st.Reason = "no supervisor runs (" + last + ")"
			orphan := provenOrphan(ctx, prober, layout, st)
			st.State, st.Child, st.NextStart = Stopped, orphan, nil
			if orphan != nil {
				st.Locks, _ = lockstore.New(layout, prober, zap.NewNop(), time.Now).Owned(ctx, orphan.Identity())
				st.Reason += fmt.Sprintf("; its gateway, pid %d, still runs unsupervised: "+
					"the next `hermes-supervisor run` (or the service manager, if one is installed) stops it and starts its own", orphan.PID)
				return st, nil
			}
		} else {
			why := noAnswer(err)
			if st.Control == "" && st.ControlError != "" {
				// It said at start that it has no endpoint: that, not
				// the dial, is the reason.
				why = "it runs without a control endpoint (" + termtext.Quote(st.ControlError) + ")"
			}
			note := fmt.Sprintf("as its state file says: supervisor pid %d runs, but %s", st.Supervisor.PID, why)
			if st.Reason != "" {
				note += "; " + st.Reason
			}
			st.Reason = note
		}
	}
	if !st.Up() {
		// What a dead supervisor's file said served the profile is
		// stale: only a fresh look says so.
		st.ServedBy = nil
		note := ownerNote(ctx, prober, layout)
		if note == "" {
			if srv := servedNow(ctx, prober, layout); srv != nil {
				st.ServedBy = srv
				note = fmt.Sprintf("; its gateway runs all the same: pid %d (home %s) serves this profile, as %s says, and `hermes-supervisor status` of that home shows it",
					srv.PID, termtext.Quote(srv.Home), termtext.Quote(srv.Via))
			}
		}
		st.Reason += note
	}
	return st, nil
}

// provenOrphan returns the gateway a dead supervisor's state file names
// when it still runs and carries that supervisor's nonce: the gateway the
// next supervisor will reclaim. Anything less proves nothing, exactly as
// in (*Supervisor).begin.
func provenOrphan(ctx context.Context, prober *procstate.Prober, layout lockstore.Layout, st *Status) *Child {
	c := st.Child
	if c == nil {
		return nil
	}
	boot, err := procstate.BootID()
	if err != nil || boot == "" || st.BootID != boot {
		return nil
	}
	p := proof{prober: prober, self: os.Getpid(), home: layout.Home}
	if c.NonceHash != "" {
		p.hashes = []string{c.NonceHash}
	}
	if _, err := p.checkRecorded(ctx, c.Identity()); err != nil {
		return nil
	}
	o := *c
	o.Orphaned = true
	return &o
}

// ownerNote says who holds the home when no supervisor does, so that a
// gateway started by hand is named rather than guessed at.
func ownerNote(ctx context.Context, prober *procstate.Prober, layout lockstore.Layout) string {
	rec, err := lockstore.ReadRecord(layout.PIDFile())
	if err != nil {
		return ""
	}
	if prober.Liveness(ctx, rec.Identity(), lockstore.IsGatewayArgv).Verdict.Gone() {
		return fmt.Sprintf("; %s names pid %d, which is gone: `hermes-supervisor sweep` clears it", layout.PIDFile(), rec.PID)
	}
	return fmt.Sprintf("; a gateway not run by hermes-supervisor (pid %d) holds this home: stop it with `hermes gateway stop`, then start `hermes-supervisor run`", rec.PID)
}

// answerContext is the part of ctx a status query gives the endpoint: a
// quarter of what is left, at most 2 s, stays for reading the state file
// when the endpoint does not answer.
func answerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-min(time.Until(dl)/4, 2*time.Second)))
}

// noAnswer says in a few words why the endpoint gave no answer.
func noAnswer(err error) string {
	switch {
	case errors.Is(err, ctlsock.ErrNoEndpoint):
		return "nothing answers at its control endpoint (" + err.Error() + ")"
	case errors.Is(err, ErrBusy):
		return "its control endpoint stayed busy with other clients"
	case errors.Is(err, ctlsock.ErrForeignPeer):
		return "another user's process holds its control endpoint"
	case errors.Is(err, os.ErrPermission):
		return "its control endpoint is not this user's to ask"
	case errors.Is(err, context.DeadlineExceeded):
		return "its control endpoint did not answer in time"
	}
	return "asking its control endpoint failed: " + err.Error()
}
