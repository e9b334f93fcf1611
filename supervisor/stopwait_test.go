package supervisor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestWaitFollowsTheSupervisorsStop holds the wait of stop and restart to
// the supervisor's own budget: it ends at the plan's first end unless the
// supervisor then reports a kill deadline further out (the gateway asked
// for more time), follows each such report, and never passes the plan's
// most. The clock is real: each case checks when the wait ended against
// the ends it was given, which a timer can reach late but never early.
func TestWaitFollowsTheSupervisorsStop(t *testing.T) {
	// margin is what StopEndsBy adds to a kill deadline (the kill grace and
	// the service manager's margin), so that a case can say when a stop
	// ends rather than when it kills.
	var zero time.Time
	e, _ := (&Status{Child: &Child{KillAt: &zero}}).StopEndsBy()
	margin := e.Sub(zero)
	const ms = time.Millisecond
	// answer is what one ask gets: an error, no kill pending, or a stop
	// that ends endsIn after the wait began: one whose kill is pending, or,
	// with killed, one whose tree was killed and has its kill grace to go.
	type answer struct {
		fail   bool
		killed bool
		endsIn time.Duration
	}
	for _, tc := range []struct {
		name    string
		plan    StopWait
		answers []answer
		// asks is how often the supervisor is asked; the wait ends over,
		// no earlier than after.
		asks  int
		after time.Duration
	}{
		{name: "fixed --timeout never asks", plan: StopWait{Fixed: 80 * ms, First: 80 * ms, Most: 80 * ms}, after: 80 * ms},
		{name: "no extension possible never asks", plan: StopWait{First: 80 * ms, Most: 80 * ms}, after: 80 * ms},
		{name: "no kill pending ends at first", plan: StopWait{First: 80 * ms, Most: time.Hour},
			answers: []answer{{}}, asks: 1, after: 80 * ms},
		{name: "a failed ask ends at first", plan: StopWait{First: 80 * ms, Most: time.Hour},
			answers: []answer{{fail: true}}, asks: 1, after: 80 * ms},
		{name: "a kill that ended is no extension", plan: StopWait{First: 200 * ms, Most: time.Hour},
			answers: []answer{{endsIn: 100 * ms}}, asks: 1, after: 200 * ms},
		{name: "an extension is followed, twice", plan: StopWait{First: 80 * ms, Most: time.Hour},
			answers: []answer{{endsIn: 300 * ms}, {endsIn: 500 * ms}, {}}, asks: 3, after: 500 * ms},
		{name: "a killed tree's kill grace is followed", plan: StopWait{First: 80 * ms, Most: time.Hour},
			answers: []answer{{killed: true, endsIn: 300 * ms}, {}}, asks: 2, after: 300 * ms},
		{name: "never past most", plan: StopWait{First: 80 * ms, Most: 400 * ms},
			answers: []answer{{endsIn: time.Hour}}, asks: 1, after: 400 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			asked := 0
			var begun time.Time
			ask := func(context.Context) (*Status, error) {
				mu.Lock()
				defer mu.Unlock()
				asked++
				if asked > len(tc.answers) {
					t.Errorf("asked %d times, have %d answers", asked, len(tc.answers))
					return nil, errors.New("no more answers")
				}
				a := tc.answers[asked-1]
				st := &Status{Child: &Child{}}
				switch {
				case a.fail:
					return nil, errors.New("the endpoint did not answer")
				case a.killed:
					// No kill_at once the tree was killed: the answer's
					// own time bounds what is left.
					st.State, st.UpdatedAt = Stopping, begun.Add(a.endsIn-margin)
				case a.endsIn > 0:
					kill := begun.Add(a.endsIn - margin)
					st.Child.KillAt = &kill
				}
				return st, nil
			}
			mu.Lock()
			begun = time.Now()
			ctx, cancel := tc.plan.Context(context.Background(), ask)
			mu.Unlock()
			defer cancel()
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
				t.Fatal("the wait did not end within a minute")
			}
			if took := time.Since(begun); took < tc.after {
				t.Errorf("the wait ended after %s, before %s", took, tc.after)
			}
			if !WaitOver(ctx) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				t.Errorf("cause %v, want the wait over (a deadline)", context.Cause(ctx))
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != tc.asks {
				t.Errorf("asked %d times, want %d", asked, tc.asks)
			}
		})
	}
}

// TestWaitEndedByItsCallerIsNotOver: a wait its caller ended (Ctrl-C) is
// not reported as a stop that outlasted it.
func TestWaitEndedByItsCallerIsNotOver(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	ctx, cancel := StopWait{First: time.Hour, Most: time.Hour}.Context(parent, func(context.Context) (*Status, error) {
		t.Error("asked the supervisor after the caller ended the wait")
		return nil, errors.New("unexpected")
	})
	defer cancel()
	stop()
	<-ctx.Done()
	if WaitOver(ctx) {
		t.Errorf("cause %v: a wait ended by its caller counts as over", context.Cause(ctx))
	}
}

// TestStopBudgetBounds: the wait a budget gives, and budgets no
// supervisor keeps, which give none.
func TestStopBudgetBounds(t *testing.T) {
	d := func(v time.Duration) Duration { return Duration(v) }
	for _, tc := range []struct {
		name        string
		b           *StopBudget
		first, most time.Duration
		ok          bool
	}{
		{"none said", nil, 0, 0, false},
		{"the default", &StopBudget{Timeout: d(75 * time.Second), MaxExtension: d(30 * time.Minute), KillGrace: d(10 * time.Second)},
			100 * time.Second, 100*time.Second + 30*time.Minute, true},
		{"no extension", &StopBudget{Timeout: d(2 * time.Minute), KillGrace: d(10 * time.Second)},
			145 * time.Second, 145 * time.Second, true},
		{"no timeout", &StopBudget{KillGrace: d(10 * time.Second)}, 0, 0, false},
		{"negative extension", &StopBudget{Timeout: d(time.Second), MaxExtension: d(-time.Second)}, 0, 0, false},
		{"overflowing", &StopBudget{Timeout: d(1 << 62), MaxExtension: d(1 << 62), KillGrace: d(1 << 62)}, 0, 0, false},
		// --stop-timeout and --max-stop-extension take any length: one past
		// what a client believes still bounds the wait, at that limit.
		{"an extension meant as no limit", &StopBudget{Timeout: d(5 * time.Minute), MaxExtension: d(10000 * time.Hour), KillGrace: d(10 * time.Second)},
			5*time.Minute + 25*time.Second, 5*time.Minute + 25*time.Second + 1000*time.Hour, true},
		{"a stop timeout past the limit", &StopBudget{Timeout: d(1 << 62), KillGrace: d(10 * time.Second)},
			1000*time.Hour + 25*time.Second, 1000*time.Hour + 25*time.Second, true},
	} {
		first, most, ok := tc.b.Bounds()
		if first != tc.first || most != tc.most || ok != tc.ok {
			t.Errorf("%s: Bounds() = %s, %s, %v; want %s, %s, %v", tc.name, first, most, ok, tc.first, tc.most, tc.ok)
		}
	}
}

// TestServiceWaitFollowsTheSupervisor: where the wait for a stopped
// service is ours (the Windows SCM), it is --timeout when given, else all
// the running supervisor says its stop may take, else the service's own.
func TestServiceWaitFollowsTheSupervisor(t *testing.T) {
	budget := &StopBudget{Timeout: Duration(5 * time.Minute), MaxExtension: Duration(time.Minute),
		KillGrace: Duration(10 * time.Second)}
	first, most, _ := budget.Bounds()
	for _, tc := range []struct {
		name string
		plan StopWait
		want time.Duration
	}{
		{"--timeout", StopWait{Fixed: 2 * time.Second, First: 2 * time.Second, Most: 2 * time.Second}, 2 * time.Second},
		{"the supervisor's budget, extensions included", StopWait{First: first, Most: most, Budget: budget}, 6*time.Minute + 25*time.Second},
		{"no supervisor said: the service's own", StopWait{First: DefaultStopWait, Most: DefaultStopWait}, 0},
	} {
		if got := tc.plan.ServiceWait(); got != tc.want {
			t.Errorf("%s: ServiceWait() = %s, want %s", tc.name, got, tc.want)
		}
	}
}
