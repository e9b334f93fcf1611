package supervisor

import (
	"context"
	"fmt"
	"time"
)

type event interface{ isEvent() }

// exited reports that a run ended.
type exited struct {
	run  runner
	exit Exit
}

// command is a request of the control endpoint (see Do).
type command struct {
	verb  string
	reply reply
}

type reply chan Response

func (exited) isEvent()  {}
func (command) isEvent() {}

// Run supervises until ctx is cancelled or a stop command arrives, then
// stops the gateway and returns. The caller holds the home's supervisor
// lock for as long as Run runs.
func (s *Supervisor) Run(ctx context.Context) error {
	if s.cfg.ControlAddress != "" {
		if srv := s.listenControl(); srv != nil {
			defer srv.Close()
		}
	}
	loopCtx, cancelWaits := context.WithCancel(context.Background())
	defer cancelWaits()
	s.loop = loopCtx
	defer s.wd.dropSpare()
	defer func() {
		if s.devNull != nil {
			s.devNull.Close()
		}
		s.spareOut.close()
	}()
	defer s.hold.resumeWrites()
	defer s.hold.flush()
	// What the limit dropped of a gateway whose output has not ended (a
	// helper left alone holds it) is counted before the run ends.
	defer s.outLimit.close()
	if err := s.startOwn(loopCtx); err != nil {
		return err
	}
	defer s.closeOwn()
	s.begin(loopCtx)
	s.feedOwn()
	s.armGuard()
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			s.fire(onStop, "supervisor asked to stop")
		case ev := <-s.events:
			s.handle(ev)
			if s.unsettled == nil {
				// Else the exit's line waits for the transition's, at the settle.
				s.hold.flush()
				s.hold.resumeWrites()
			}
		case r := <-s.statusReq:
			r <- Response{OK: true, Status: s.statusNow()}
		case <-timerC(s.timers.backoff):
			s.timers.backoff = nil
			s.fire(onStartDue, "backoff over")
		case <-timerC(s.deadline):
			// The stop's one deadline: the kill first, then the end of
			// the wait for the killed tree.
			s.deadline = nil
			if s.stop.killed {
				s.fire(onGraceOver, "the killed tree is not gone")
			} else {
				s.fire(onKillDue, "the gateway did not stop in time")
			}
		case <-timerC(s.timers.settle):
			s.timers.settle = nil
			s.settle()
		case <-timerC(s.timers.ready):
			s.timers.ready = nil
			s.checkReady()
		case <-timerC(s.wd.check):
			s.heed(s.wd.checked())
		case <-s.own.due:
			s.feedOwn()
		case <-timerC(s.timers.guard):
			s.timers.guard = nil
			s.guard(loopCtx)
		case <-timerC(s.timers.rewrite):
			s.timers.rewrite = nil
			_, _ = s.persist()
		}
		if s.intent == exitNext && s.run == nil {
			s.answer(Response{OK: true, Status: s.snapshot()})
			return nil
		}
	}
}

func timerC(t Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// handle turns an event into what it means for the machine. Events of a
// run that already ended are dropped.
func (s *Supervisor) handle(ev event) {
	s.settle()
	switch ev := ev.(type) {
	case command:
		s.command(ev)
	case exited:
		if ev.run == s.run {
			s.exited(ev.exit)
		}
	case notifyEvent:
		if ev.run == s.run && s.child != nil {
			s.heed(s.wd.notified(ev.msg))
		}
	case notifyRejected:
		if ev.run == s.run {
			s.heed(s.wd.rejectedBy(ev))
		}
	case ownedFound:
		s.found(ev)
	case keepAliveMissed:
		if ev.run == s.run && s.child != nil {
			s.heed(s.wd.missed())
		}
	case serverExited:
		if ev.gen == s.watchGen && s.state == Served {
			s.guard(s.loop)
		}
	}
}

func (s *Supervisor) command(c command) {
	switch c.verb {
	case "status":
		c.reply <- Response{OK: true, Status: s.statusNow()}
	case "stop":
		s.waiters = append(s.waiters, c.reply)
		s.fire(onStop, "stop requested")
	case "restart":
		if s.intent == exitNext {
			c.reply <- Response{Error: "supervisor is shutting down"}
			return
		}
		s.waiters = append(s.waiters, c.reply)
		s.hist = History{}
		s.fire(onRestart, "restart requested")
		if s.state == Served || s.state == Parked {
			// The start was held back again and the state did not change,
			// so no transition answers: say so now, with the reason.
			s.answer(Response{OK: true, Status: s.snapshot()})
		}
	default:
		c.reply <- Response{Error: fmt.Sprintf("unknown verb %q: use status, stop or restart", c.verb)}
	}
}
