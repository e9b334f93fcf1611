package supervisor

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Status answers come from the supervisor's memory: the state machine's
// own fields and the gateway's locks as last looked up. Nothing in a
// status answer reads the lock dir, so it costs the same at 10 or 100 000
// lock files, and a sweep in progress does not hold it up (see whileBusy).

// ownedLocks is what the supervisor knows of the locks its gateway holds.
type ownedLocks struct {
	run     runner // the run they were looked up for
	entries []lockstore.Entry
	at      time.Time // when they were read; zero: never
	looking bool      // a lookup runs
}

// ownedFound is the result of a lookup of the gateway's locks, made off
// the loop.
type ownedFound struct {
	run     runner
	entries []lockstore.Entry
	at      time.Time
}

func (ownedFound) isEvent() {}

// ownedMaxAge is how old the locks a status names may get before a status
// request looks them up again, off the loop; the request itself is
// answered with what is known, and how old it is.
const ownedMaxAge = 30 * time.Second

// lookUpOwned reads, on a goroutine of its own, the locks naming id, the
// running gateway, and feeds them back to the loop. One lookup runs at
// a time.
func (s *Supervisor) lookUpOwned(id procstate.Identity) {
	if s.owned.looking || s.run == nil {
		return
	}
	s.owned.looking = true
	run, store, events, ctx := s.run, s.store, s.events, s.loop
	go func() {
		es, err := store.Owned(ctx, id)
		if err != nil {
			s.log.Debug("could not read every lock of the gateway", zap.Error(err))
		}
		select {
		case events <- ownedFound{run: run, entries: es, at: time.Now()}:
		case <-ctx.Done():
		}
	}()
}

// found takes in a lookup's result, if it is of the running gateway.
func (s *Supervisor) found(f ownedFound) {
	s.owned.looking = false
	if f.run != s.run {
		return
	}
	s.owned.run, s.owned.entries, s.owned.at = f.run, f.entries, f.at
}

// statusNow is the answer to a status request from the loop; a list of
// the gateway's locks that is missing or old is looked up again for the
// next one.
func (s *Supervisor) statusNow() *Status {
	st := s.known()
	if s.child != nil && (s.owned.run != s.run || time.Since(s.owned.at) > ownedMaxAge) {
		s.lookUpOwned(s.gatewayID())
	}
	return st
}

// known is the status as the loop knows it, the gateway's locks as last
// looked up.
func (s *Supervisor) known() *Status {
	s.settle()
	st := s.snapshot()
	if s.child != nil && s.owned.run == s.run && !s.owned.at.IsZero() {
		st.Locks = slices.Clone(s.owned.entries)
		at := s.owned.at
		st.LocksAt = &at
	}
	return st
}

// whileBusy runs f, a long step of the loop (a sweep of a large lock
// dir), while status requests are answered with what was known when it
// began, saying what the loop is doing and since when. The answer is
// published, not served by a goroutine: a restart's sweep, over in a
// tenth of a millisecond, then costs no goroutine and no wake-up of
// another thread.
func (s *Supervisor) whileBusy(what string, f func()) {
	// What is known, with no lookup of the gateway's locks: the leftover
	// sweep of every start would list the lock dir again, and a lookup
	// still running when the gateway is ready holds off the one its
	// readiness asks for.
	st := s.known()
	st.Busy = what
	since := time.Now()
	st.BusySince = &since
	s.busy.Store(st)
	defer s.busy.Store(nil)
	// A request already waiting for the loop is told to look again.
	next := make(chan struct{})
	close(*s.busyBegins.Swap(&next))
	f()
}

// askStatus answers a status request: from the status a busy loop
// published, or else from the loop.
func (s *Supervisor) askStatus(ctx context.Context) Response {
	r := make(reply, 1)
	for {
		// Loaded before busy: if the loop becomes busy after this look,
		// this channel is closed.
		begins := *s.busyBegins.Load()
		if st := s.busy.Load(); st != nil {
			c := *st
			return Response{OK: true, Status: &c}
		}
		if s.beforeAsk != nil {
			s.beforeAsk()
		}
		select {
		case s.statusReq <- r:
			return awaitAnswer(ctx, r)
		case <-begins:
		case <-ctx.Done():
			return Response{Error: "supervisor busy: " + ctx.Err().Error()}
		}
	}
}
