// Package supervisor owns the Hermes gateway as a child process: it sweeps
// stale files before every start, restarts the gateway with backoff, and
// releases the gateway's pid and lock files whenever it exits.
package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// Supervisor runs one gateway. All of its state belongs to the goroutine
// in Run; other goroutines talk to it through events.
type Supervisor struct {
	cfg Config
	// control is where the control endpoint listens, or why it does not.
	control struct{ addr, err string }
	log     *zap.Logger
	clock   Clock
	store   *lockstore.Store
	prober  *procstate.Prober
	self    procstate.Identity
	events  chan event
	// statusReq carries status requests to the loop. While the loop is
	// busy with a long step, busy is the status it published (whileBusy),
	// and busyBegins, closed when such a step begins, tells a request
	// already waiting on statusReq to take that instead.
	statusReq  chan reply
	busy       atomic.Pointer[Status]
	busyBegins atomic.Pointer[chan struct{}]
	// beforeAsk, set only by tests, runs in askStatus between its look at
	// busy and its wait for the loop.
	beforeAsk func()
	rnd       func() float64
	bootID    string
	nonce     string // in our gateways' environment; never written anywhere
	hashed    string // the nonce's hash, kept in the state file
	// hashDurable: a write of the state file, with hashed, is on disk.
	hashDurable bool
	// recordedPID is the gateway the state file last written names, 0
	// for none: a restart before the gateway was ever ready stays in
	// Starting, and must still record the new gateway (see transition).
	recordedPID int
	// starting is set while start moves to Starting; persistDue is a
	// state file write it left for housekeep (see publish).
	starting, persistDue bool
	prev                 proof // what the predecessor's state file proves; set by begin

	// Owned by the Run goroutine. The state machine (machine.go):
	state    State
	intent   intent
	reason   string
	deadline Timer        // the stop's one deadline; what it means follows from stop
	stop     stopDeadline // the stop under way
	loop     context.Context
	// What its actions use:
	spawn    func(cfg *Config, self procstate.Identity, log *zap.Logger, clock Clock) (spawned, error)
	child    *Child
	run      runner
	gateway  *procstate.Identity // the child's gateway when not the child itself (see findGateway)
	hist     History
	restarts int
	blocked  int // consecutive starts refused by a foreign gateway
	// consecutive starts refused by an unusable home or lock dir, and why
	startFails   int
	startupError string
	homeSeen     bool // the home was usable once: its absence is a deletion
	dirsProbed   bool // afterExit probed the dirs for the start it fires at once
	hadChild     bool // a gateway ran before: the next start is a restart
	lastExit     *Exit
	nextStart    *time.Time
	waiters      []reply // answered once the pending stop/restart completes
	timers       loopTimers
	own          ownPings      // our own keep-alive to our service manager
	unsettled    *unsettled    // the start under way, until settle
	settleAfter  time.Duration // how long a new gateway runs before settle; 0: at once
	wd           watchdog
	// The profile, and who serves it when another gateway does (served.go):
	profile   string // the home's profile name, "default" for a root home
	named     bool   // the home is a named profile's, <root>/profiles/<name>
	root      *lockstore.Store
	look      func(context.Context) (*ServedBy, string)
	server    *ServedBy          // in state Served
	handovers int                // starts after a server went, since our gateway last ran
	watchGen  int                // the server watch whose exit counts
	unwatch   context.CancelFunc // ends the server watch
	// timing times the restart under way, from the exit to the next
	// start; nil unless debug logging is on (see timing.go).
	timing *timing
	// hold holds back the exit's log line from the restart's path.
	hold *LineHold
	// toRelease are the gateways whose exit is being handled: a start
	// that follows at once releases their files in its sweep; else
	// exited does once the transition is over.
	toRelease []procstate.Identity
	// stopMarked: terminate wrote (or tried to write) a planned-stop
	// marker for the run under way, which its exit removes if the
	// gateway left it; an exit nobody asked for has none to look for.
	stopMarked bool
	// devNull is every gateway's stdin (see nullInput); Run closes it.
	devNull *os.File
	// spareOut is the next gateway's output pipes (see housekeep); Run
	// closes them.
	spareOut *outputPipes
	// outLimit is the rate limit on the output of every gateway of this
	// run, as journald's is on a service's lines, not one start's: a
	// gateway that restarts every second must not get a burst a second.
	outLimit *outputLimit
	owned    ownedLocks // the gateway's locks as last looked up (busy.go)
}

type loopTimers struct {
	backoff, ready, guard, settle, rewrite Timer
	readyPoll, guardEvery, rewriteEvery    time.Duration
}

// New prepares a supervisor; Run starts it.
func New(cfg Config, log *zap.Logger, clock Clock, prober *procstate.Prober) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid supervisor configuration: %w", err)
	}
	self, err := prober.Self(context.Background())
	if err != nil {
		return nil, fmt.Errorf("inspect own process: %w", err)
	}
	bootID, err := procstate.BootID()
	if err != nil {
		// Without it no later run can prove our gateway ours: it would be
		// left alone rather than reclaimed.
		log.Warn("cannot read the boot id; a successor will not reclaim our gateway", zap.Error(err))
	}
	nonce, hashed := newNonce()
	hold := cfg.LineHold
	if hold == nil {
		log, hold = HoldLines(log)
	}
	spelled := cfg.HermesHome
	if spelled == "" {
		spelled = cfg.Layout.Home
	}
	profile, named := lockstore.NamedProfile(spelled)
	if !named {
		profile = lockstore.DefaultProfile
	}
	root := lockstore.New(lockstore.Layout{Home: lockstore.ProfileRoot(spelled), LockDir: cfg.Layout.LockDir}, prober, log, clock.Now)
	host := lockstore.New(cfg.Layout, prober, log, clock.Now)
	sup := &Supervisor{
		profile:     profile,
		named:       named,
		root:        root,
		look:        lookServer(root, host, profile, named),
		bootID:      bootID,
		nonce:       nonce,
		hashed:      hashed,
		cfg:         cfg,
		log:         log,
		hold:        hold,
		clock:       clock,
		prober:      prober,
		store:       lockstore.New(cfg.Layout, prober, log, clock.Now).WithGatewayCommand(cfg.Command).WithWorkers(cfg.SweepWorkers).WithFanOut(cfg.SweepFanOut),
		self:        self,
		events:      make(chan event, 16),
		statusReq:   make(chan reply),
		rnd:         rand.Float64,
		state:       Stopped,
		loop:        context.Background(),
		spawn:       spawnChild,
		settleAfter: settleDelay,
		wd: watchdog{log: log, clock: clock, home: cfg.Layout.Home, setting: cfg.Watchdog, hangAfter: cfg.HangAfter,
			stopTimeout: cfg.StopTimeout, maxExtension: cfg.MaxStopExtension},
		outLimit: newOutputLimit(log, clock, cfg.OutputBurst, cfg.OutputInterval),
	}
	begins := make(chan struct{})
	sup.busyBegins.Store(&begins)
	return sup, nil
}

// treeFields names the cgroup a kill of the gateway's tree takes down with
// it, and why it is ours, when it runs in one.
func (s *Supervisor) treeFields() []zap.Field {
	st, ok := s.run.(*started)
	if !ok || st.cgroup() == "" {
		return nil
	}
	return []zap.Field{zap.String("cgroup", st.cgroup()),
		zap.String("evidence", "the cgroup this supervisor created for this gateway, inside the cgroup delegated to it ("+st.evidence+")")}
}

// Do hands a command (status, stop or restart) to the Run goroutine and
// waits for the answer; stop and restart answer once they have completed.
func (s *Supervisor) Do(ctx context.Context, verb string) Response {
	if verb == "status" {
		return s.askStatus(ctx)
	}
	r := make(reply, 1)
	select {
	case s.events <- command{verb: verb, reply: r}:
	case <-ctx.Done():
		return Response{Error: "supervisor busy: " + ctx.Err().Error()}
	}
	return awaitAnswer(ctx, r)
}

// awaitAnswer waits for the answer to a request handed to the loop. An
// answer already given wins over the end of ctx: a stop is answered just
// before Run returns and closes the endpoint, which ends ctx, and a
// select that found both ready would pick one at random, telling the
// client that a stop which happened did not.
func awaitAnswer(ctx context.Context, r reply) Response {
	select {
	case resp := <-r:
		return resp
	case <-ctx.Done():
		select {
		case resp := <-r:
			return resp
		default:
			return Response{Error: "no answer in time: " + ctx.Err().Error()}
		}
	}
}

// persist writes the state file, for shells that cannot reach the endpoint
// and for the successor that must prove our gateway ours. It does not
// fsync: a successor believes only a file of its own boot, so what a
// crash of the machine leaves (written or not, whole or torn) proves
// nothing either way, and a crash of the supervisor alone loses nothing
// the page cache holds. A transition to starting is on every restart's
// path, where two fsyncs cost milliseconds and stalled the file-system
// journal the new gateway was writing its own files through.
func (s *Supervisor) persist() (*Status, error) { return s.persistSynced(false) }

// persistSynced is persist, with or without the fsyncs: only the first
// write of the nonce's hash is synced (see start).
func (s *Supervisor) persistSynced(sync bool) (*Status, error) {
	snap := s.snapshot()
	err := writeStatusFile(s.cfg.Layout.SupervisorState(), snap, sync)
	if err == nil {
		s.hashDurable = s.hashDurable || sync
		s.recordedPID = 0
		if snap.Child != nil {
			s.recordedPID = snap.Child.PID
		}
	}
	s.rewriteLater(err)
	s.recheckLock()
	return snap, err
}

// rewriteLater tries a failed write of the state file again, after 50 ms,
// then twice as long each time up to 5 s, rather than at the next
// transition, which a settled supervisor may not make for days: a reader
// holding the file open (Windows without POSIX rename semantics, Wine),
// a full disk or a file in the way would otherwise leave every shell's
// status stale. The first failure of a run of them is a warning, its
// end a line of its own.
func (s *Supervisor) rewriteLater(err error) {
	if err == nil {
		if s.timers.rewriteEvery > 0 {
			s.log.Info("wrote the supervisor state file again", zap.String("path", s.cfg.Layout.SupervisorState()))
		}
		s.stopTimer(&s.timers.rewrite)
		s.timers.rewriteEvery = 0
		return
	}
	if s.timers.rewriteEvery == 0 {
		s.log.Warn("could not write the supervisor state file; trying again", zap.Error(err))
	} else {
		s.log.Debug("could not write the supervisor state file", zap.Error(err))
	}
	s.timers.rewriteEvery = min(max(2*s.timers.rewriteEvery, rewriteFirst), rewriteMax)
	s.stopTimer(&s.timers.rewrite)
	s.timers.rewrite = s.clock.NewTimer(s.timers.rewriteEvery)
}

// The state file's write is tried again after rewriteFirst, then twice as
// long each time, up to rewriteMax.
const (
	rewriteFirst = 50 * time.Millisecond
	rewriteMax   = 5 * time.Second
)

// recheckLock takes the home's lock again when its file was unlinked or
// replaced (see HomeLock.Recheck), at each write of the state file: the
// supervisor is otherwise idle, and a timer of its own would wake it for
// nothing. Staying up is what a service manager expects of it: exiting
// would take the gateway down over a file, and the lock's job is done as
// soon as the file at the path is ours again.
func (s *Supervisor) recheckLock() {
	if s.cfg.HomeLock == nil {
		return
	}
	retaken, err := s.cfg.HomeLock.Recheck(s.loop)
	switch {
	case retaken:
		s.log.Warn("the home's supervisor lock file was removed or replaced; locked the file at its path again",
			zap.String("path", s.cfg.HomeLock.Path()))
	case err != nil:
		s.log.Error("the home's supervisor lock file was removed or replaced and cannot be taken again: another supervisor may run for this home; stop it, or stop this one",
			zap.String("path", s.cfg.HomeLock.Path()), zap.Error(err))
	}
}

func (s *Supervisor) snapshot() *Status {
	st := &Status{
		State:        s.state,
		Reason:       s.reason,
		Home:         s.cfg.Layout.Home,
		LockDir:      s.cfg.Layout.LockDir,
		Restarts:     s.restarts,
		LastExit:     s.lastExit,
		NextStart:    s.nextStart,
		UpdatedAt:    s.clock.Now(),
		Source:       "endpoint",
		BootID:       s.bootID,
		NonceHash:    s.hashed,
		StartupError: s.startupError,
		Command:      slices.Clone(s.cfg.Command),
		Control:      s.control.addr,
		ControlError: s.control.err,
		Stop: &StopBudget{Timeout: Duration(s.cfg.StopTimeout), MaxExtension: Duration(s.cfg.MaxStopExtension),
			KillGrace: Duration(KillGrace)},
	}
	st.ExternalSupervisor = s.cfg.ExternalSupervisor
	if s.state == Served && s.server != nil {
		sb := *s.server
		st.ServedBy = &sb
	}
	st.Supervisor.PID, st.Supervisor.StartTime, st.Supervisor.Argv = s.self.PID, s.self.StartTime, s.self.Argv
	if s.child != nil {
		c := *s.child
		c.Argv = slices.Clone(c.Argv)
		s.wd.describe(&c)
		if s.state == Stopping && s.deadline != nil && !s.stop.killed && !s.stop.hang {
			t := s.stop.killAt
			c.KillAt = &t
		}
		if gw := s.gateway; gw != nil && gw.PID != c.PID {
			c.Gateway = &Process{PID: gw.PID, StartTime: gw.StartTime}
		}
		st.Child = &c
	}
	return st
}

// answer completes the pending stop and restart requests.
func (s *Supervisor) answer(r Response) {
	for _, w := range s.waiters {
		w <- r
	}
	s.waiters = nil
}

func (s *Supervisor) notify(state string) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(state)
	}
}

// publish persists and reports a change that is not a transition (the
// gateway's STATUS=, the watchdog arming), so that `status` and our own
// service manager see it.
func (s *Supervisor) publish() {
	var snap *Status
	if s.starting {
		// The transition of a start: the file is written at the start's
		// housekeep, not while the new gateway is being started.
		snap, s.persistDue = s.snapshot(), true
	} else {
		snap, _ = s.persist()
		s.persistDue = false
	}
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(snap)
	}
}

// childPID is the pid of the gateway we started, 0 when none runs.
func (s *Supervisor) childPID() int {
	if s.child == nil {
		return 0
	}
	return s.child.PID
}
