package supervisor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// A sweep of a huge lock dir runs on the loop; a status asked meanwhile
// is answered at once with what was known when it began, and says that a
// sweep runs.
func TestStatusIsAnsweredWhileTheLoopSweeps(t *testing.T) {
	m := newMachine(t)
	setup(m, "backoff")
	var got Response
	m.s.whileBusy("sweeping the home and lock dir before a start", func() {
		// The loop is here, in the sweep: nobody else could answer.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got = m.s.Do(ctx, "status")
	})
	if !got.OK || got.Status == nil {
		t.Fatalf("status during a sweep: %+v", got)
	}
	if got.Status.State != Backoff || !strings.HasPrefix(got.Status.Busy, "sweeping") || got.Status.BusySince == nil {
		t.Errorf("status during a sweep = state %q, busy %q since %v; want backoff, sweeping, a time", got.Status.State, got.Status.Busy, got.Status.BusySince)
	}
	var b strings.Builder
	if err := got.Status.WriteText(&b, time.Now()); err != nil || !strings.Contains(b.String(), "\nbusy:       ") {
		t.Errorf("status text says nothing of the sweep:\n%s", b.String())
	}
	// After the sweep the loop answers again, and no longer busy.
	if st := m.s.statusNow(); st.Busy != "" {
		t.Errorf("busy %q after the sweep", st.Busy)
	}
}

// A status request that looked before the loop became busy, and so
// waits for the loop, is answered with the busy status all the same.
func TestAWaitingStatusIsAnsweredWhenTheLoopTurnsBusy(t *testing.T) {
	m := newMachine(t)
	setup(m, "backoff")
	looked := make(chan struct{})
	var once sync.Once
	m.s.beforeAsk = func() { once.Do(func() { close(looked) }) }
	answer := make(chan Response, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		answer <- m.s.Do(ctx, "status")
	}()
	<-looked // it found the loop not busy, and goes to wait for it
	var got Response
	m.s.whileBusy("sweeping the home and lock dir before a start", func() {
		// Nobody runs the loop here: only the busy status can answer.
		select {
		case got = <-answer:
		case <-time.After(30 * time.Second):
			t.Error("a request waiting for the loop was not answered while it was busy")
		}
	})
	if !got.OK || got.Status == nil || !strings.HasPrefix(got.Status.Busy, "sweeping") {
		t.Fatalf("status of a request waiting when the sweep began: %+v", got)
	}
}

// status names the gateway's locks from memory: the lock dir is read off
// the loop, and the answer says when.
func TestStatusNamesLocksFromMemory(t *testing.T) {
	m := newMachine(t)
	setup(m, "running")
	rec := lockstore.NewRecord(m.s.child.Identity(), m.s.cfg.Layout.Home)
	rec.Scope = "telegram-bot-token"
	path := m.s.cfg.Layout.ScopedLock(rec.Scope, "tok")
	if err := lockstore.WriteExclusive(path, rec); err != nil {
		t.Fatal(err)
	}
	// markReady asked for a lookup, made off the loop: wait for its
	// answer and forget it, then let a status ask.
	if ev, ok := (<-m.s.events).(ownedFound); !ok {
		t.Fatalf("after ready: event %T, want ownedFound", ev)
	}
	m.s.owned = ownedLocks{}
	st := m.s.statusNow()
	if len(st.Locks) != 0 || st.LocksAt != nil {
		t.Fatalf("first status named locks %+v it cannot have read yet", st.Locks)
	}
	ev := <-m.s.events // the lookup the status asked for, made off the loop
	f, ok := ev.(ownedFound)
	if !ok {
		t.Fatalf("event %T, want ownedFound", ev)
	}
	m.s.handle(f)
	st = m.s.statusNow()
	if len(st.Locks) != 1 || st.Locks[0].Path != path || st.LocksAt == nil {
		t.Fatalf("status locks = %+v at %v, want %s", st.Locks, st.LocksAt, path)
	}
	// Fresh enough: no second lookup.
	select {
	case ev := <-m.s.events:
		t.Errorf("a fresh list was looked up again: %T", ev)
	default:
	}
	// A lookup for a run that has ended is dropped.
	m.exit(0)
	m.s.found(ownedFound{run: f.run, entries: f.entries, at: f.at})
	if st := m.s.statusNow(); len(st.Locks) != 0 {
		t.Errorf("locks of an ended run: %+v", st.Locks)
	}
}

// A busy loop publishes what it knows and starts no lookup of the
// gateway's locks, even where a status request would.
func TestABusyLoopLooksNothingUp(t *testing.T) {
	m := newMachine(t)
	setup(m, "running")
	select {
	case ev := <-m.s.events: // markReady's lookup
		if _, ok := ev.(ownedFound); !ok {
			t.Fatalf("after ready: event %T, want ownedFound", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("markReady looked up no locks")
	}
	m.s.owned = ownedLocks{} // no list: a status would look one up
	m.s.whileBusy("sweeping the home's leftovers", func() {})
	if m.s.owned.looking {
		t.Fatal("a busy loop started a lookup of the gateway's locks")
	}
	m.s.statusNow()
	if !m.s.owned.looking {
		t.Fatal("a status request with no list of locks started no lookup")
	}
}
