package supervisor

// How long a client waits on a stop or restart it asked for.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultStopWait is how long a client waits on a stop or restart when
// neither it nor the supervisor says: a stop of the default stop timeout,
// and the margin our service manager gives it.
const DefaultStopWait = DefaultStopTimeout + ownStopGrace

// Bounds returns how long a stop begun now may take: first without an
// extension, most with every one the gateway may ask for; both with the
// margin our own service manager gives (ownStopGrace), for the
// supervisor's exit and its answer. A budget that no supervisor keeps (a
// part that is negative, or a kill grace past maxStopPart) is no budget:
// ok is false. A stop timeout or extension past maxStopPart, which the
// flags accept (an extension meant as no limit), counts as maxStopPart:
// refusing it would leave the client the 90 s of a supervisor that does
// not say, shorter than the stop timeout it did say.
func (b *StopBudget) Bounds() (first, most time.Duration, ok bool) {
	if b == nil {
		return 0, 0, false
	}
	t, x, g := time.Duration(b.Timeout), time.Duration(b.MaxExtension), time.Duration(b.KillGrace)
	if t <= 0 || x < 0 || g < 0 || g > maxStopPart {
		return 0, 0, false
	}
	t, x = min(t, maxStopPart), min(x, maxStopPart)
	first = t + g + ownStopGrace
	return first, first + x, true
}

// maxStopPart bounds each part of a StopBudget a client believes: a
// sum of parts past it could overflow, and no stop is meant to take that.
const maxStopPart = 1000 * time.Hour

// StopEndsBy is when the stop in progress ends at the latest, as the
// supervisor now keeps it: its kill deadline (extensions included), plus
// the kill grace and ownStopGrace. A gateway still stopping with no kill
// deadline shown has had its tree killed, or is a hung one being taken
// down (hangKillGrace, then the kill): that ends within the kill grace of
// the answer (UpdatedAt). ok is false when no stop of a gateway is under
// way.
func (st *Status) StopEndsBy() (t time.Time, ok bool) {
	if st == nil || st.Child == nil {
		return time.Time{}, false
	}
	grace := KillGrace
	if _, _, ok := st.Stop.Bounds(); ok {
		grace = time.Duration(st.Stop.KillGrace)
	}
	switch {
	case st.Child.KillAt != nil:
		return st.Child.KillAt.Add(grace + ownStopGrace), true
	case st.State == Stopping && !st.UpdatedAt.IsZero():
		return st.UpdatedAt.Add(grace + ownStopGrace), true
	}
	return time.Time{}, false
}

// ErrWaitOver is the cause that ends a StopWait's context: the wait is over.
var ErrWaitOver = fmt.Errorf("the wait is over: %w", context.DeadlineExceeded)

// StopWait is how long a client waits on a stop or restart it asked
// for: a fixed --timeout, or what the supervisor's own stop budget lets the stop take,
// as `systemctl stop` waits the unit's TimeoutStopSec and any extension
// the service asks for.
type StopWait struct {
	// Fixed is --timeout: the wait ends then, whatever the supervisor says.
	Fixed time.Duration
	// First is when the wait ends unless the supervisor then reports a
	// later kill deadline (the gateway asked for more time); Most bounds
	// every such extension. Both count from the start of the wait.
	First, Most time.Duration
	// Budget is the supervisor's answer the plan comes from; nil when none
	// answered or it did not say, and the plan is DefaultStopWait.
	Budget *StopBudget
}

// PlanStopWait makes the plan for a wait: fixed (--timeout) when
// positive, else the stop budget of the supervisor of home, asked over its
// control endpoint.
func PlanStopWait(ctx context.Context, home string, fixed time.Duration) StopWait {
	if fixed > 0 {
		return StopWait{Fixed: fixed, First: fixed, Most: fixed}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	p := StopWait{First: DefaultStopWait, Most: DefaultStopWait}
	st, err := AskHome(home)(ctx)
	if err != nil {
		return p
	}
	if first, most, ok := st.Stop.Bounds(); ok {
		p.First, p.Most, p.Budget = first, most, st.Stop
	}
	return p
}

// ServiceWait is how long a stop through the service manager waits where
// that wait is ours (platform/service's Config.StopWait: the Windows
// SCM): --timeout when given; else all the running supervisor says its stop may take,
// extensions included, since the wait ends once the service stops and the
// supervisor ends its stop by then; else 0, the installed service's own
// stop timeout and grace.
func (p StopWait) ServiceWait() time.Duration {
	if p.Fixed == 0 && p.Budget == nil {
		return 0
	}
	return p.Most
}

// String says the plan, for stop --dry-run.
func (p StopWait) String() string {
	switch {
	case p.Fixed > 0:
		return fmt.Sprintf("wait up to %s (--timeout)", p.Fixed)
	case p.Budget == nil:
		return fmt.Sprintf("wait up to %s (no supervisor said how long its stop may take)", p.First)
	}
	s := fmt.Sprintf("wait up to %s (its stop timeout %s, kill grace %s, and 15s)", p.First,
		time.Duration(p.Budget.Timeout), time.Duration(p.Budget.KillGrace))
	if p.Most > p.First {
		s += fmt.Sprintf(", up to %s while the gateway asks for more time", p.Most)
	}
	return s
}

// Context returns the context a stop or restart waits in, from now:
// it ends with cause ErrWaitOver at p.First, or, when the supervisor then
// reports a stop that ends later (StopEndsBy), at that end, asked again
// each time, never past p.Most. ask asks the supervisor for its status.
func (p StopWait) Context(parent context.Context, ask func(context.Context) (*Status, error)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	begun := time.Now()
	ceiling := begun.Add(p.Most)
	t := time.NewTimer(p.First)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !time.Now().Before(ceiling) {
				cancel(ErrWaitOver)
				return
			}
			end, ok := p.endsLater(ctx, parent, ask)
			now := time.Now()
			if !ok || !end.After(now) {
				cancel(ErrWaitOver)
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
func (p StopWait) endsLater(ctx, parent context.Context, ask func(context.Context) (*Status, error)) (time.Time, bool) {
	if p.Most <= p.First {
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

// WaitOver reports whether ctx, from StopWait.Context, ended because the wait
// was over rather than because its parent ended.
func WaitOver(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrWaitOver)
}

// AskHome returns the question a StopWait's Context asks: the status of
// the supervisor of home, over its control endpoint.
func AskHome(home string) func(context.Context) (*Status, error) {
	return func(ctx context.Context) (*Status, error) {
		resp, err := CallHome(ctx, home, "status")
		if err == nil && resp.Status == nil {
			err = fmt.Errorf("status: no status in the answer: %s", resp.Error)
		}
		return resp.Status, err
	}
}
