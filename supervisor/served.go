package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// A profile's gateway is not always ours to start: another gateway may
// serve the profile (Hermes' multiplexer, or newer Hermes' host gateway),
// the profile may be parked, or deleted. The supervisor then starts
// nothing, says so in its state, and watches for the change.

// ParkedFile is the file in a home that says no gateway is to run for it
// (newer Hermes: the host gateway does not serve a parked profile).
const ParkedFile = "gateway.parked"

// guardEvery is how often the supervisor looks for a tombstone while a
// named profile's gateway runs, and for the parked file to go.
const guardEvery = 2 * time.Second

// servedCheck bounds the re-reading of the serving gateway's files: it
// starts at servedCheckMin and doubles, since a pidfd (or process handle)
// reports the server's exit at once where there is one.
const (
	servedCheckMin = time.Second
	servedCheckMax = 30 * time.Second
)

// multiplexerRefusal is what Hermes prints, exiting 78, when the root's
// multiplexer serves the profile (hermes_cli/gateway.py run_gateway).
const multiplexerRefusal = "already serves profile '"

// serverExited reports that the process serving the profile exited.
type serverExited struct{ gen int }

func (serverExited) isEvent() {}

// lookServer returns a look at who serves profile, for New: the root's
// gateway_state.json served_profiles (a named profile only; believed only
// with the root's live gateway) and the lock dir's host-gateway.json
// (believed only with its live, proven process and its lock held). It
// touches no supervisor state, so the server's watcher may call it too;
// why says, when none serves it, what was found.
func lookServer(root, host *lockstore.Store, profile string, named bool) func(context.Context) (*ServedBy, string) {
	return func(ctx context.Context) (*ServedBy, string) {
		if named {
			if m, ok := root.Multiplexer(ctx); ok && m.Serves(profile) {
				return &ServedBy{PID: m.PID, Home: root.Layout().Home, Via: root.Layout().StateFile() + " (served_profiles)"}, ""
			}
		}
		h, ok := host.HostGateway(ctx)
		if ok && h.Serves(profile) {
			return &ServedBy{PID: h.PID, Home: h.Home, Via: filepath.Join(host.Layout().LockDir, lockstore.HostGatewayRecord)}, ""
		}
		if h.Why == "" {
			h.Why = "no live gateway lists it as served"
		}
		return nil, h.Why
	}
}

// servedNow is lookServer's answer for layout's home, for a reader with
// no supervisor: who serves the home, or nil.
func servedNow(ctx context.Context, prober *procstate.Prober, layout lockstore.Layout) *ServedBy {
	profile, named := lockstore.NamedProfile(layout.Home)
	root := lockstore.New(lockstore.Layout{Home: lockstore.ProfileRoot(layout.Home), LockDir: layout.LockDir}, prober, zap.NewNop(), time.Now)
	host := lockstore.New(layout, prober, zap.NewNop(), time.Now)
	if !named {
		profile = lockstore.DefaultProfile
	}
	srv, _ := lookServer(root, host, profile, named)(ctx)
	return srv
}

// findServer is lookServer's answer, unless the server it names is our
// own gateway.
func (s *Supervisor) findServer(ctx context.Context) (*ServedBy, string) {
	srv, why := s.look(ctx)
	if srv != nil && s.child != nil && (s.child.PID == srv.PID || s.gatewayID().PID == srv.PID) {
		return nil, fmt.Sprintf("the serving gateway, pid %d, is our own", srv.PID)
	}
	return srv, why
}

// tombstoned reports Hermes' tombstone of this (named) profile.
func (s *Supervisor) tombstoned() (string, bool) {
	if !s.named {
		return "", false
	}
	// Where Hermes writes it: under the root of the home as spelled.
	home := s.cfg.HermesHome
	if home == "" {
		home = s.cfg.Layout.Home
	}
	t := lockstore.ProfileTombstone(home)
	_, err := os.Lstat(t)
	return t, err == nil
}

// parked reports the home's gateway.parked.
func (s *Supervisor) parked() (string, bool) {
	p := filepath.Join(s.cfg.Layout.Home, ParkedFile)
	_, err := os.Lstat(p)
	return p, err == nil
}

// heldBack fires what keeps a start from happening: a deleted profile, a
// parked one, or one another gateway serves. It reports whether it did.
func (s *Supervisor) heldBack(ctx context.Context) bool {
	if t, ok := s.tombstoned(); ok {
		s.fire(onDeleted, "the profile was deleted ("+t+" exists): not starting its gateway; the supervisor exits")
		return true
	}
	if p, ok := s.parked(); ok {
		s.fire(onParked, "the profile is parked ("+p+" exists): no gateway is started until it is removed")
		return true
	}
	if srv, _ := s.findServer(ctx); srv != nil {
		s.server = srv
		s.fire(onServed, fmt.Sprintf("profile %s is served by gateway pid %d (%s): Hermes refuses a second gateway; this supervisor starts its own once that one stops serving it", s.profile, srv.PID, srv.Via))
		return true
	}
	return false
}

// refused handles the exits by which Hermes says it will not run this
// gateway, before the restart policy sees them: argparse rejecting
// --external-supervisor (exit 2) is retried at once without the flag, not
// counted; the multiplexer's refusal (exit 78) or an attach to the host
// gateway (exit 75) with the serving gateway found is state Served. A
// refusal whose server cannot be proven is marked, so that the policy
// counts it as a failure with backoff rather than as exit 78's final
// verdict. It reports whether it moved the machine.
func (s *Supervisor) refused(ctx context.Context, e *Exit) bool {
	if e.StartError != "" || e.Signal != "" || e.Reason != "" {
		return false
	}
	switch {
	case e.Code == 2 && len(s.cfg.Command) > 0 && s.cfg.Command[len(s.cfg.Command)-1] == ExternalSupervisorFlag &&
		bytes.Contains(e.said, []byte("unrecognized arguments")) && bytes.Contains(e.said, []byte(ExternalSupervisorFlag)):
		s.cfg.Command = slices.Clone(s.cfg.Command[:len(s.cfg.Command)-1])
		s.store = s.store.WithGatewayCommand(s.cfg.Command)
		s.cfg.ExternalSupervisor = &ExtSup{Why: "not passed: this Hermes rejected it at start (exit 2, unrecognized arguments), so it was retried at once without it; `hermes update` treats the gateway as one run by hand"}
		s.log.Warn("the gateway rejected --external-supervisor; starting it again without the flag", zap.Strings("command", s.cfg.Command))
		s.fire(onStartDue, "Hermes rejected --external-supervisor (exit 2): retrying at once without it")
		return true
	case e.Code == ExitConfig && bytes.Contains(e.said, []byte(multiplexerRefusal+s.profile+"'")),
		e.Code == ExitRestart && s.named:
		srv, why := s.findServer(ctx)
		if srv != nil {
			s.server = srv
			s.fire(onServed, fmt.Sprintf("Hermes says profile %s is served (%s) by gateway pid %d (%s): not restarting it; this supervisor starts its own once that one stops serving it",
				s.profile, e, srv.PID, srv.Via))
			return true
		}
		if e.Code == ExitConfig {
			e.Reason = "Hermes refused: it says the multiplexer serves profile " + s.profile + ", but no serving gateway could be proven (" + why + ")"
		}
	}
	return false
}

// armGuard arms the guard timer: in Served with its backoff, else every
// guardEvery where there is something to look for.
func (s *Supervisor) armGuard() {
	s.stopTimer(&s.timers.guard)
	switch {
	case s.intent == exitNext:
		return
	case s.state == Served:
		s.timers.guardEvery = min(max(2*s.timers.guardEvery, servedCheckMin), servedCheckMax)
		s.timers.guard = s.clock.NewTimer(s.timers.guardEvery)
	case s.named || s.state == Parked:
		s.timers.guard = s.clock.NewTimer(guardEvery)
	}
}

// guard looks again for what heldBack looks for, as the guard timer (or
// the server's exit) asks.
func (s *Supervisor) guard(ctx context.Context) {
	s.stopTimer(&s.timers.guard)
	defer func() {
		// What the guard fired may have armed it already (doWatch).
		if s.timers.guard == nil {
			s.armGuard()
		}
	}()
	if t, ok := s.tombstoned(); ok && s.intent != exitNext {
		s.fire(onDeleted, "the profile was deleted ("+t+" exists): stopping its gateway as Hermes' `profile delete` expects; the supervisor exits")
		return
	}
	switch s.state {
	case Parked:
		if _, ok := s.parked(); !ok {
			s.fire(onUnparked, "the profile is no longer parked")
		}
	case Backoff:
		// Waiting to take over (or to retry): a server that came back
		// serves the profile, and ours would only be refused, or keep
		// the server from serving the others.
		if srv, _ := s.findServer(ctx); srv != nil {
			s.server = srv
			s.fire(onServed, fmt.Sprintf("profile %s is served again, by gateway pid %d (%s): not starting our own", s.profile, srv.PID, srv.Via))
		}
	case Served:
		s.servedLook(ctx)
	}
}

// servedLook follows the gateway that serves the profile: another that
// serves it now is followed; one that is gone is handed over from, after
// the handover grace, unless a supervisor of ours is bringing it back.
func (s *Supervisor) servedLook(ctx context.Context) {
	srv, why := s.findServer(ctx)
	switch {
	case srv != nil && srv.PID == s.server.PID:
		return
	case srv != nil:
		s.server = srv
		s.fire(onServed, fmt.Sprintf("profile %s is served by gateway pid %d now (%s)", s.profile, srv.PID, srv.Via))
		return
	}
	if sup, ok := s.serverRestarting(ctx); ok {
		reason := fmt.Sprintf("gateway pid %d, which served profile %s, is gone (%s); the supervisor of its home (pid %d) is bringing it back: waiting for it, not starting our own",
			s.server.PID, s.profile, why, sup)
		if s.reason != reason {
			s.fire(onServed, reason)
		}
		// Looked for every second, not with the served state's doubling:
		// the new gateway is due in seconds (on a loaded host the doubling
		// left 16 s between looks).
		s.timers.guardEvery = 0
		return
	}
	s.handovers++
	delay := max(s.cfg.Policy.delay(s.handovers, s.rnd), s.cfg.Policy.HandoverGrace)
	at := s.clock.Now().Add(delay)
	s.nextStart = &at
	s.fire(onServerGone, fmt.Sprintf("gateway pid %d no longer serves profile %s (%s); starting our own in %s unless it is back by then", s.server.PID, s.profile, why, delay.Round(time.Millisecond)))
}

// serverRestarting reports the pid of a live hermes-supervisor of the
// serving gateway's home that is bringing a gateway back there (its state
// file, believed only while that supervisor provably runs, and is not
// stopped: one stopped by SIGSTOP or Ctrl-Z brings nothing back until it
// gets SIGCONT, which may be never): starting one, backing off, stopping
// (a restart, or a stop it will say), or running the very gateway that
// served us, gone but its exit not yet seen. A gateway of ours started
// meanwhile would make the new one serve no other profile. One running
// another gateway, or the one that served us still running but no longer
// listing the profile, brings nothing back.
func (s *Supervisor) serverRestarting(ctx context.Context) (int, bool) {
	if s.server == nil || s.server.Home == "" {
		return 0, false
	}
	l := lockstore.Layout{Home: s.server.Home, LockDir: s.cfg.Layout.LockDir}
	st, err := ReadStatusFile(l.SupervisorState())
	if err != nil || st.Supervisor.PID == s.self.PID {
		return 0, false
	}
	switch st.State {
	case Starting, Backoff, Stopping:
	case Running:
		if st.Child == nil || st.Child.PID != s.server.PID {
			return 0, false
		}
		gw := st.Child.Identity()
		if !s.prober.Liveness(ctx, gw, func(argv []string) bool { return procstate.ArgvMatches(gw.Argv, argv) }).Verdict.Gone() {
			return 0, false
		}
	default:
		return 0, false
	}
	self, argvEqual := st.supervisorSelf()
	if v := s.prober.Liveness(ctx, self, argvEqual).Verdict; v.Gone() || v == procstate.Stopped {
		return 0, false
	}
	return st.Supervisor.PID, true
}

// watchServer waits, off the loop, for the serving gateway to exit, where
// the OS gives a handle on it; the guard timer re-reads its files anyway.
func (s *Supervisor) watchServer() {
	s.timers.guardEvery = 0
	if s.unwatch != nil {
		s.unwatch()
	}
	ctx, cancel := context.WithCancel(s.loop)
	s.unwatch = cancel
	s.watchGen++
	gen, pid, look := s.watchGen, s.server.PID, s.look
	go func() {
		err := proctree.AwaitExit(ctx, pid, func() bool {
			srv, _ := look(ctx)
			return srv != nil && srv.PID == pid
		})
		if ctx.Err() != nil || errors.Is(err, errors.ErrUnsupported) {
			return
		}
		select {
		case s.events <- serverExited{gen: gen}:
		case <-ctx.Done():
		}
	}()
}
