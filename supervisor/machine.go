package supervisor

import (
	"go.uber.org/zap"
)

// The supervisor is one state machine: its state (the State a status
// shows), an intent that says what the end of the current run leads to,
// and a table of what each trigger does in each. Everything else the loop
// holds (the child, the watchdog, the timers) is data the actions use.

// intent is what the supervisor does once the running gateway is gone.
type intent uint8

const (
	keepRunning  intent = iota // an exit nobody asked for goes to the restart policy
	restartNext                // a restart was asked, or a predecessor's gateway is replaced: start at once
	exitNext                   // the supervisor stops: Run returns once the gateway is gone
	hangTakedown               // the watchdog judged the gateway hung: its exit is a failure for the policy
)

func (i intent) String() string {
	return [...]string{"keep running", "restart next", "exit next", "hang takedown"}[i]
}

// trigger is what moves the machine.
type trigger uint8

const (
	onStartDue   trigger = iota // begin, the backoff timer, a restart asked with no gateway, an exit the policy restarts at once
	onStarted                   // a gateway process runs
	onRetryLater                // a start was refused, or the policy backs off: try again after a delay
	onGiveUp                    // no retry can help: crash loop, a command that cannot run, exit 78
	onReady                     // the gateway is ready, or its ready deadline passed
	onStop                      // stop asked, or Run's context ended
	onRestart                   // restart asked
	onReclaim                   // at start-up: a predecessor's gateway runs, proven ours
	onHung                      // the watchdog judged the gateway hung
	onKillDue                   // the deadline passed before the gateway exited
	onGraceOver                 // the deadline passed after the kill: the tree is not gone
	onExit                      // the gateway exited
	onSurvived                  // the gateway's run ended with processes of its tree alive
	onServed                    // another gateway serves the profile: Hermes refuses ours
	onServerGone                // the serving gateway exited or no longer serves the profile
	onParked                    // the home's gateway.parked keeps any gateway from starting
	onUnparked                  // gateway.parked is gone
	onDeleted                   // Hermes' tombstone of the profile appeared
)

// action is what a transition does, besides moving to its state.
type action uint8

const (
	doStart     action = iota // check the home, sweep, spawn the gateway (start); its outcome is the next trigger
	doWait                    // arm the backoff timer (the trigger's delay)
	doShutdown                // STOPPING=1 to our own service manager; no start is pending any more
	doTerminate               // planned-stop marker and SIGTERM; the deadline at the stop timeout
	doTakeDown                // stacks (SIGUSR2) and SIGTERM; the deadline at hangKillGrace
	doKill                    // kill the tree; the deadline at KillGrace
	doAbandon                 // give up on what survived the kill: the run ends with them named
	doDecide                  // apply the restart policy to the exit (afterExit)
	doAnnounce                // READY=1 to our own service manager
	doWatch                   // watch the serving gateway (its exit, its files) or the parked file
)

const stay State = "" // a row's To: the state does not change

// row is one line of the transition table: in any of From (nil: every
// state), with any of Intents (nil: every intent), On moves to To with the
// intent Then (nil: unchanged) and runs Do in order.
type row struct {
	From    []State
	Intents []intent
	On      trigger
	To      State
	Then    *intent
	Do      []action
	Why     string // the reason the transition logs, when not the trigger's
}

func set(i intent) *intent { return &i }

var (
	idle    = []State{Backoff, Failed, Stopped, Served, Parked} // no gateway of ours runs
	running = []State{Starting, Running}                        // a gateway runs and no stop is under way
)

// table is the state machine. The first row that matches applies; a
// trigger no row matches changes nothing (a late event of a run that
// already ended, a second stop).
var table = []row{
	// Starting a gateway. Every start attempt ends in onStarted,
	// onRetryLater, onGiveUp, or an exit the policy judges (doDecide).
	{From: nil, Intents: []intent{keepRunning, restartNext, hangTakedown}, On: onStartDue, To: stay, Then: set(keepRunning), Do: []action{doStart}},
	{From: nil, On: onStarted, To: Starting},
	{From: nil, On: onRetryLater, To: Backoff, Do: []action{doWait}},
	{From: nil, On: onGiveUp, To: Failed},
	{From: []State{Starting}, On: onReady, To: Running, Do: []action{doAnnounce}},

	// Served and parked: no gateway of ours runs, nor is one started,
	// while another gateway serves the profile or it is parked; the
	// supervisor watches for that to end.
	{From: nil, Intents: []intent{exitNext}, On: onServed, To: stay},
	{From: nil, On: onServed, To: Served, Then: set(keepRunning), Do: []action{doWatch}},
	{From: []State{Served}, On: onServerGone, To: Backoff, Do: []action{doWait}},
	{From: nil, Intents: []intent{exitNext}, On: onParked, To: stay},
	{From: nil, On: onParked, To: Parked, Then: set(keepRunning), Do: []action{doWatch}},
	{From: []State{Parked}, On: onUnparked, To: stay, Do: []action{doStart}},

	// A deleted profile: its gateway stops as on a stop request, and the
	// supervisor exits (0: stopped on purpose, and the service manager
	// leaves it stopped).
	{From: nil, Intents: []intent{exitNext}, On: onDeleted, To: stay},
	{From: idle, On: onDeleted, To: Stopped, Then: set(exitNext), Do: []action{doShutdown}},
	{From: running, On: onDeleted, To: Stopping, Then: set(exitNext), Do: []action{doShutdown, doTerminate}},
	{From: []State{Stopping}, On: onDeleted, To: stay, Then: set(exitNext), Do: []action{doShutdown}},

	// Stopping on request: the gateway gets the planned-stop marker and
	// SIGTERM, and its tree is killed at the deadline.
	{From: nil, Intents: []intent{exitNext}, On: onStop, To: stay},
	{From: idle, On: onStop, To: Stopped, Then: set(exitNext), Do: []action{doShutdown}},
	{From: running, On: onStop, To: Stopping, Then: set(exitNext), Do: []action{doShutdown, doTerminate}},
	{From: []State{Stopping}, On: onStop, To: stay, Then: set(exitNext), Do: []action{doShutdown}},
	{From: nil, Intents: []intent{exitNext}, On: onRestart, To: stay}, // refused: the supervisor is shutting down
	{From: idle, On: onRestart, To: stay, Do: []action{doStart}},
	{From: running, On: onRestart, To: Stopping, Then: set(restartNext), Do: []action{doTerminate}},
	{From: []State{Stopping}, On: onRestart, To: stay, Then: set(restartNext)},

	// A predecessor's gateway is stopped, then ours started; a hung
	// gateway is taken down without waiting for a drain.
	{From: []State{Stopped}, On: onReclaim, To: Stopping, Then: set(restartNext), Do: []action{doTerminate}},
	{From: running, Intents: []intent{keepRunning}, On: onHung, To: Stopping, Then: set(hangTakedown), Do: []action{doTakeDown}},

	// The one deadline of a stop: first the kill, then the end of waiting.
	{From: []State{Stopping}, On: onKillDue, To: stay, Do: []action{doKill}},
	{From: []State{Stopping}, On: onGraceOver, To: stay, Do: []action{doAbandon}},

	// The end of a run.
	{From: nil, Intents: []intent{exitNext}, On: onExit, To: Stopped, Why: "stopped on request"},
	{From: nil, Intents: []intent{exitNext}, On: onSurvived, To: Stopped, Why: "stopped on request"},
	{From: nil, On: onSurvived, To: Failed, Then: set(keepRunning)},
	{From: []State{Stopping}, Intents: []intent{restartNext}, On: onExit, To: stay, Then: set(keepRunning), Do: []action{doStart}},
	{From: nil, On: onExit, To: stay, Then: set(keepRunning), Do: []action{doDecide}},
}

// lookup returns the row for trigger t in state st with intent in.
func lookup(st State, in intent, t trigger) (row, bool) {
	for _, r := range table {
		if r.On == t && (r.From == nil || contains(r.From, st)) && (r.Intents == nil || contains(r.Intents, in)) {
			return r, true
		}
	}
	return row{}, false
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// fire moves the machine by t: it changes state and intent as the table
// says and runs the row's action. reason says why, for the log and the
// status; delay is onRetryLater's.
func (s *Supervisor) fire(t trigger, reason string) {
	s.settle()
	r, ok := lookup(s.state, s.intent, t)
	if !ok {
		return
	}
	if r.Then != nil && *r.Then != s.intent {
		s.log.Debug("intent", zap.Stringer("from", s.intent), zap.Stringer("to", *r.Then), zap.String("reason", reason))
		s.intent = *r.Then
	}
	if r.Why != "" {
		reason = r.Why
	}
	if r.To != stay {
		s.transition(r.To, reason)
	}
	for _, a := range r.Do {
		s.act(a, reason)
	}
}

// transition moves to a state; each change is logged once and persisted
// for shells that cannot reach the endpoint. Entering Starting or Stopped
// completes the pending requests; entering Failed fails them.
func (s *Supervisor) transition(to State, reason string) {
	s.releasePending()
	from := s.state
	if from == to && s.reason == reason && s.recordedPID == s.childPID() {
		// Nothing changed. A gateway restarted before it was ever ready
		// is Starting→Starting with the same reason, and is not this: the
		// state file must name the new gateway before a successor can
		// prove it ours.
		return
	}
	s.state, s.reason = to, reason
	if to != Backoff {
		// A pending start belongs to Backoff.
		s.stopTimer(&s.timers.backoff)
		s.nextStart = nil
	}
	if from == Served && to != Served {
		s.server = nil
		if s.unwatch != nil {
			s.unwatch()
			s.unwatch = nil
		}
	}
	fields := []zap.Field{zap.String("from", string(from)), zap.String("to", string(to)), zap.String("reason", reason)}
	if s.child != nil {
		fields = append(fields, zap.Int("pid", s.child.PID))
	}
	if to == Failed {
		s.log.Error("state", fields...)
	} else {
		s.log.Info("state", fields...)
	}
	s.publish()
	switch to {
	case Starting, Stopped:
		s.answer(Response{OK: true, Status: s.snapshot()})
	case Failed:
		s.answer(Response{Error: s.reason, Status: s.snapshot()})
	}
}
