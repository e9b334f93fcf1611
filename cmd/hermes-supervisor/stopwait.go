package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// defaultStopWait is how long stop and restart wait when neither --timeout
// nor the supervisor says: a stop of the default stop timeout, and the
// margin our service manager gives it.
const defaultStopWait = supervisor.DefaultStopTimeout + 15*time.Second

// waitHelp is the help of stop's and restart's --timeout.
func waitHelp(verb string) string {
	return "how long to wait for the " + verb + " to complete; 0 or unset: as long as the supervisor says its stop may take " +
		"(stop timeout + kill grace + 15s, longer while the gateway asks for more time; " + defaultStopWait.String() + " if it does not say)"
}

// checkWait refuses a negative --timeout of stop or restart.
func checkWait(timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("--timeout must not be negative, got %s: pass a duration such as 2m, or leave it out to wait as long as the supervisor says its stop may take", timeout)
	}
	return nil
}

// errWaitOver is the cause that ends a stop's or restart's wait.
var errWaitOver = fmt.Errorf("the wait is over: %w", context.DeadlineExceeded)

// waitPlan is how long the CLI waits on a stop or restart: a fixed
// --timeout, or what the supervisor's own stop budget lets the stop take,
// as `systemctl stop` waits the unit's TimeoutStopSec and any extension
// the service asks for.
type waitPlan struct {
	// fixed is --timeout: the wait ends then, whatever the supervisor says.
	fixed time.Duration
	// first is when the wait ends unless the supervisor then reports a
	// later kill deadline (the gateway asked for more time); most bounds
	// every such extension. Both count from the start of the wait.
	first, most time.Duration
	// budget is the supervisor's answer the plan comes from; nil when none
	// answered or it did not say, and the plan is defaultStopWait.
	budget *supervisor.StopBudget
}

// planWait makes the plan for a wait: --timeout when given (fixed > 0),
// else the stop budget of the supervisor of home, asked over its control
// endpoint.
func planWait(ctx context.Context, home string, fixed time.Duration) waitPlan {
	if fixed > 0 {
		return waitPlan{fixed: fixed, first: fixed, most: fixed}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	p := waitPlan{first: defaultStopWait, most: defaultStopWait}
	resp, err := supervisor.CallHome(ctx, home, "status")
	if err != nil || resp.Status == nil {
		return p
	}
	if first, most, ok := resp.Status.Stop.Bounds(); ok {
		p.first, p.most, p.budget = first, most, resp.Status.Stop
	}
	return p
}

// serviceWait is how long a stop through the service manager waits where
// that wait is ours (service.Config.StopWait: the Windows SCM): --timeout
// when given; else all the running supervisor says its stop may take,
// extensions included, since the wait ends once the service stops and the
// supervisor ends its stop by then; else 0, the installed service's own
// stop timeout and grace.
func (p waitPlan) serviceWait() time.Duration {
	if p.fixed == 0 && p.budget == nil {
		return 0
	}
	return p.most
}

// String says the plan, for stop --dry-run.
func (p waitPlan) String() string {
	switch {
	case p.fixed > 0:
		return fmt.Sprintf("wait up to %s (--timeout)", p.fixed)
	case p.budget == nil:
		return fmt.Sprintf("wait up to %s (no supervisor said how long its stop may take)", p.first)
	}
	s := fmt.Sprintf("wait up to %s (its stop timeout %s, kill grace %s, and 15s)", p.first,
		time.Duration(p.budget.Timeout), time.Duration(p.budget.KillGrace))
	if p.most > p.first {
		s += fmt.Sprintf(", up to %s while the gateway asks for more time", p.most)
	}
	return s
}

// waitContext returns the context a stop or restart waits in, from now:
// it ends with cause errWaitOver at p.first, or, when the supervisor then
// reports a stop that ends later (StopEndsBy), at that end, asked again
// each time, never past p.most. ask asks the supervisor for its status.
func (p waitPlan) waitContext(parent context.Context, ask func(context.Context) (*supervisor.Status, error)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	begun := time.Now()
	ceiling := begun.Add(p.most)
	t := time.NewTimer(p.first)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !time.Now().Before(ceiling) {
				cancel(errWaitOver)
				return
			}
			end, ok := p.endsLater(ctx, parent, ask)
			now := time.Now()
			if !ok || !end.After(now) {
				cancel(errWaitOver)
				return
			}
			if end.After(ceiling) {
				end = ceiling
			}
			t.Reset(end.Sub(now))
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// endsLater asks the supervisor when the stop in progress ends, if the
// plan may wait past its first end.
func (p waitPlan) endsLater(ctx, parent context.Context, ask func(context.Context) (*supervisor.Status, error)) (time.Time, bool) {
	if p.most <= p.first {
		return time.Time{}, false
	}
	actx, cancel := context.WithTimeout(parent, 2*time.Second)
	defer cancel()
	// Asked while ctx lives: a wait that ended meanwhile needs no answer.
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	st, err := ask(actx)
	if err != nil {
		return time.Time{}, false
	}
	return st.StopEndsBy()
}

// waitOver reports whether ctx, from waitContext, ended because the wait
// was over rather than because its parent ended.
func waitOver(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errWaitOver)
}
