package supervisor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

type command struct {
	verb  string
	reply reply
}

// Run supervises until ctx is cancelled or a stop command arrives, then
// stops the gateway and returns. The caller holds the home's supervisor
// lock for as long as Run runs.
func (s *Supervisor) Run(ctx context.Context) error {
	if s.cfg.ControlAddress != "" {
		srv, err := listenControl(s.cfg.ControlAddress, s.cfg.ControlUsers, s.cfg.RequestTimeout, s.log, s.Do)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	loopCtx, cancelWaits := context.WithCancel(context.Background())
	defer cancelWaits()
	s.begin(loopCtx)
	s.feedOwn()
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			s.beginShutdown("supervisor asked to stop")
		case ev := <-s.events:
			s.handle(loopCtx, ev)
		case <-timerC(s.timers.backoff):
			s.timers.backoff = nil
			s.nextStart = nil
			s.start(loopCtx)
		case <-timerC(s.timers.kill):
			s.timers.kill = nil
			s.killTree("gateway did not stop in time; killing its process tree",
				zap.Duration("stop_timeout", s.cfg.StopTimeout),
				zap.Duration("extended_by", s.wd.stopBy.Sub(s.wd.stopCeil.Add(-s.cfg.MaxStopExtension))))
		case <-timerC(s.timers.grace):
			s.graceOver(loopCtx)
		case <-timerC(s.timers.ready):
			s.timers.ready = nil
			s.checkReady()
		case <-timerC(s.wd.check):
			s.checkHang()
		case <-timerC(s.wd.kill):
			s.killHung()
		case <-timerC(s.wd.own):
			s.feedOwn()
		}
		if s.shutdown && s.run == nil {
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

func (s *Supervisor) handle(ctx context.Context, ev event) {
	switch ev := ev.(type) {
	case exited:
		if ev.run != s.run {
			return
		}
		s.exited(ctx, ev.exit)
	case command:
		s.command(ctx, ev)
	case notifyEvent:
		s.onNotify(ev)
	case notifyRejected:
		s.onRejected(ev)
	case keepAliveMissed:
		s.onMissed(ev)
	}
}

func (s *Supervisor) command(ctx context.Context, c command) {
	switch c.verb {
	case "status":
		st := s.snapshot()
		if s.child != nil {
			st.Locks, _ = s.store.Owned(ctx, s.gatewayID())
		}
		c.reply <- Response{OK: true, Status: st}
	case "stop":
		s.waiters = append(s.waiters, c.reply)
		s.beginShutdown("stop requested")
	case "restart":
		if s.shutdown {
			c.reply <- Response{Error: "supervisor is shutting down"}
			return
		}
		s.waiters = append(s.waiters, c.reply)
		s.hist = History{}
		if s.run == nil {
			s.stopTimer(&s.timers.backoff)
			s.nextStart = nil
			s.start(ctx)
			return
		}
		s.restart = true
		s.stopChild("restart requested")
	default:
		c.reply <- Response{Error: fmt.Sprintf("unknown verb %q: use status, stop or restart", c.verb)}
	}
}
