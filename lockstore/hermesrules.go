package lockstore

// Hermes' judging rules, as gateway/status.py of NousResearch/hermes-agent
// @ 00067189 applies them and in that file's order, plus the rules by
// which we are stricter, each marked "Stricter than Hermes" next to the
// rule it tightens. Nothing here does I/O: store.go gathers the facts (the
// files' bytes and stamps, whether gateway.lock is held; looks.go takes
// one look at each pid a record names), calls these functions and acts on
// their decisions.
// hermesread.go is the one reader of records and hermescmdline.go the
// command-line classifier; docs/reliability.md has the conformance table
// that tries them all.
//
//	status.py                                   here
//	_pid_record_belongs_to_current_profile      rules.homeMatches (sameHome: home_*.go)
//	_pid_exists, _live_pid_from_record          rules.live, rules.settled
//	_record_matches_live_gateway_pid            rules.runtimeRecord
//	_command_line_belongs_to_profile            CommandLineBelongsToProfile, rules.otherProfile
//	_read_json_file returning None              rules.unreadable
//	is_gateway_runtime_lock_active              lockState, rules.runtimeLockFile
//	get_runtime_status_running_pid              rules.stateFile
//	_scoped_lock_record_is_stale                rules.scopedRecord, rules.scopedOwner (hermesrules_scoped.go)
//	_process_is_stopped                         processIsStopped (hermesrules_scoped.go)
//	acquire_scoped_lock                         rules.scopedLockFile (hermesrules_scoped.go)
//	_marker_is_stale, _read_live_pid_marker     markerStale, rules.markerFile (hermesrules_markers.go)
//	get_running_pid                             rules.pidFile, getRunningPID (hermesrules_running.go)
//
// The five stricter rules: the writer's uid (rules.live), a process that
// wrote its record itself (rules.wroteItself), the mid-write grace
// (rules.unreadable), no gateway.lock file at all (rules.pidFile), and
// impossible start times on macOS and Windows (procstate's compareStart,
// which rules.live calls through procstate.StartTimesConflict).

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// fileFacts is one file as store.go read it: its bytes, when it was last
// written, and the one reader's reading of it (rec, or err: ErrEmpty or
// *CorruptError).
type fileFacts struct {
	data  []byte
	mtime time.Time
	rec   hermesRecord
	err   error
	// held: some process holds the file locked (see keepHeld). store.go
	// probes only the files the rules would move; heldErr says why it
	// could not.
	held    bool
	heldErr error
}

// recordFacts reads data as a record (parseHermesRecord). writer is the
// uid that created the file, for files the writer creates afresh (pid
// file, scoped locks), else nil.
func recordFacts(data []byte, mtime time.Time, barePID bool, writer *uint32) fileFacts {
	f := fileFacts{data: data, mtime: mtime}
	f.rec, f.err = parseHermesRecord(data, barePID)
	f.rec.writer = writer
	return f
}

// lockState is what is_gateway_runtime_lock_active found of gateway.lock.
type lockState int

const (
	lockNone    lockState = iota // no gateway.lock file: perhaps a Hermes older than it
	lockFree                     // the file exists and nobody holds it: no gateway runs
	lockHeld                     // a live process holds it
	lockUnknown                  // it could not be read or probed
)

// rules are Hermes' rules for one judgement: the home judged, the clock,
// the command lines the supervisor itself starts (they count as
// gateways), and one look at each pid the records name.
type rules struct {
	home string
	now  time.Time
	own  [][]string
	// procs are fixed looks at pids (a test's); the rest are looks's.
	procs map[int]procFacts
	looks *looker
	// expand is os.path.expanduser as Hermes' process would apply it to
	// a recorded hermes_home (ok false: it cannot be reproduced); nil
	// leaves it as written.
	expand func(string) (string, bool)
}

// ruling is one rule's answer on one record.
type ruling struct {
	keep    bool
	verdict procstate.Verdict
	reason  string
	// elsewhere: not keep only because the live gateway is another
	// profile's, which only Hermes' scoped readers ask (expected_home).
	// Its start-up asks get_running_pid() unscoped, which counts that
	// gateway as running and removes nothing: see keptElsewhere.
	elsewhere bool
}

func keep(v procstate.Verdict, reason string) ruling {
	return ruling{keep: true, verdict: v, reason: reason}
}

func stale(v procstate.Verdict, reason string) ruling { return ruling{verdict: v, reason: reason} }

// decision is the rules' answer on one file: the record read, what its
// owner is, and what a sweep does with the file.
type decision struct {
	record  *Record
	verdict procstate.Verdict
	action  Action
	reason  string
}

// decide turns a ruling on rec into a decision: keep, or sweep.
func decide(rec hermesRecord, r ruling) decision {
	// A copy of the record alone, not of all rec holds: one per file judged.
	kept := rec.Record
	d := decision{record: &kept, verdict: r.verdict, action: ActionSweep, reason: r.reason}
	if r.keep {
		d.action = ActionKeep
	}
	return d
}

// gateway reports whether a live command line counts as a gateway for
// the rule at hand (runtime: run or restart; else run only), or is one
// the supervisor itself started.
func (r *rules) gateway(argv []string, runtime bool) bool {
	if isDemoGateway(argv) {
		return true
	}
	for _, c := range r.own {
		if procstate.ArgvMatches(c, argv) {
			return true
		}
	}
	if runtime {
		return IsGatewayRuntime(argv)
	}
	return IsGatewayRun(argv)
}

// homeMatches mirrors _pid_record_belongs_to_current_profile: a record
// without hermes_home (older Hermes) proves nothing and passes.
// _canonical_hermes_home expands "~" first (os.path.expanduser). unknown
// says why Hermes' answer cannot be known here, when it cannot.
func (r *rules) homeMatches(h hermesRecord) (match bool, unknown string) {
	if h.HermesHome == "" {
		return true, ""
	}
	if h.homeSurrogate {
		return false, "its hermes_home escapes a lone surrogate (Python's spelling of a path byte that is not UTF-8), which is not read here as Hermes reads it"
	}
	home := h.HermesHome
	if r.expand != nil {
		var ok bool
		if home, ok = r.expand(home); !ok {
			return true, "" // keeps more, never less
		}
	}
	rooted := home[0] == '/' || home[0] == filepath.Separator
	if !filepath.IsAbs(home) && !rooted {
		// Hermes writes it absolute; a hand-written relative one may be
		// this home or not, as the reader's working directory has it. A
		// rooted one without a drive (Windows) is sameHome's to judge.
		return false, "its hermes_home is relative, which Hermes' resolve() takes from the working directory of the Hermes process reading it, not known here"
	}
	return sameHome(home, r.home)
}

// raisesOn is sameHome's unknown where Hermes' resolve() raises.
func raisesOn(raises bool) string {
	if !raises {
		return ""
	}
	return "its hermes_home leads through a loop of symbolic links, or links nested too deep, on which Hermes' own resolve() raises (Python 3.11 and 3.12)"
}

// otherProfile reports a live gateway command line that, in a named
// profile's home, is not that profile's (CommandLineBelongsToProfile).
// What the supervisor itself starts, and the demo gateway, are this
// home's whatever their argv says.
func (r *rules) otherProfile(argv []string) bool {
	if isDemoGateway(argv) {
		return false
	}
	for _, c := range r.own {
		if procstate.ArgvMatches(c, argv) {
			return false
		}
	}
	return !CommandLineBelongsToProfile(argv, r.home)
}

// live is _live_pid_from_record: _pid_from_record, _pid_exists (a zombie
// counts as dead, a stopped process as alive) and _start_times_conflict.
// It returns a ruling when the process settles it; when it does not, the
// command line decides, and one that was not read keeps the record.
func (r *rules) live(h hermesRecord) (procstate.Live, *ruling) {
	p, rl := r.settled(h)
	if rl == nil && p.argvUnread {
		p = r.look(h.PID, true)
	}
	if rl == nil && p.argvUnread {
		// A guard: a pid whose command line was not read can never make
		// a file look unowned.
		k := keep(procstate.Unknown, "its command line was not read; kept")
		rl = &k
	}
	return p.live, rl
}

// settled is live on what the look without the command line holds: a
// ruling when that settles the record, else nil.
func (r *rules) settled(h hermesRecord) (procFacts, *ruling) {
	if h.pidRaises {
		// int() of an infinite float raises OverflowError, which
		// _pid_from_record does not catch: Hermes decides nothing.
		rl := keep(procstate.Unknown, "its pid is an infinite number, on which Hermes' own check raises; kept")
		return procFacts{}, &rl
	}
	if !h.pidOK {
		rl := stale(procstate.Dead, "names no pid")
		return procFacts{}, &rl
	}
	p := r.look(h.PID, false)
	l, err := p.live, p.err
	var rl ruling
	switch {
	case errors.Is(err, procstate.ErrNoProcess):
		rl = stale(procstate.Dead, "no such process")
	case err != nil:
		// Never delete what cannot be inspected.
		rl = keep(procstate.Unknown, oneLine(err.Error()))
	case l.Zombie:
		rl = stale(procstate.Zombie, "process is a zombie")
	case procstate.OwnerConflict(h.writer, l.UID):
		// Stricter than Hermes: on darwin another user's command line
		// cannot be read, so without this a record with a null start
		// time naming a pid now held by a root daemon stays alive.
		rl = stale(procstate.Reused, fmt.Sprintf("pid now runs as uid %d, the file was written by uid %d", *l.UID, *h.writer))
	case h.startBogus && l.StartTime != nil:
		rl = stale(procstate.Reused, "recorded start time is not a number")
	case procstate.StartTimesConflict(h.StartTime, l, r.now):
		// Stricter than Hermes on macOS and Windows: a recorded start
		// time that cannot be epoch centiseconds is unknown, not a
		// conflict (procstate's compareStart).
		rl = stale(procstate.Reused, fmt.Sprintf("start time %d differs from recorded %d", *l.StartTime, *h.StartTime))
	default:
		return p, nil
	}
	return p, &rl
}

// wroteItself is the stricter-than-Hermes rule: the live process has the
// record's pid, its known start time and its full argv, so it wrote the
// record, whatever its command line looks like.
func (r *rules) wroteItself(h hermesRecord, l procstate.Live) bool {
	return procstate.StartTimesEqual(h.StartTime, l, r.now) && l.Argv != nil && procstate.ArgvMatches(h.Argv, l.Argv)
}

// runtimeRecord decides whether a pid, lock or state record names this
// home's running gateway, as get_running_pid and
// get_runtime_status_running_pid try each record with
// _record_matches_live_gateway_pid: alive (stopped counts), no start-time
// conflict, home matching, and a run-or-restart command line (the
// record's own argv when the live one cannot be read).
func (r *rules) runtimeRecord(h hermesRecord) ruling {
	l, settled := r.live(h)
	if settled != nil {
		return *settled
	}
	if h.homeRaises {
		return keep(procstate.Unknown, "its hermes_home is no path, on which Hermes' own check raises; kept")
	}
	match, unknown := r.homeMatches(h)
	if unknown != "" {
		return keep(procstate.Unknown, unknown+"; kept")
	}
	if !match {
		return stale(procstate.Reused, "record belongs to another Hermes home ("+h.HermesHome+")")
	}
	stopped := ""
	if l.Stopped {
		stopped = "; stopped, which Hermes still counts as running"
	}
	unread := "command line unreadable"
	if l.Argv != nil {
		unread = "command line " + quoteArgv(l.Argv) + " reads as blank to Hermes, which takes it for unreadable"
	}
	read := runtimeCmdlineRead(l.Argv)
	switch {
	case r.wroteItself(h, l):
		// Stricter than Hermes: see wroteItself.
		return keep(procstate.Alive, "same process (start time and command line match)"+stopped)
	case read && r.gateway(l.Argv, true) && !r.otherProfile(l.Argv):
		return keep(procstate.Alive, "a live gateway"+stopped)
	case read && r.gateway(l.Argv, true):
		// _record_matches_live_gateway_pid with expected_home: the pid was
		// reused by the gateway of another profile.
		rl := stale(procstate.Reused, "pid now runs the gateway of another profile, "+quoteArgv(l.Argv)+" (a named profile's gateway carries -p <name> on its argv)")
		rl.elsewhere = true
		return rl
	case read:
		return stale(procstate.Reused, "pid now runs "+quoteArgv(l.Argv))
	case h.recordLooksLikeGateway():
		return keep(procstate.Alive, unread+"; the record is a gateway's"+stopped)
	}
	return stale(procstate.Reused, unread+" and the record is not a gateway's")
}

// runtimeCmdlineRead reports whether _record_matches_live_gateway_pid
// reads a live command line (its `not live_cmdline`): not when none was
// read, nor when Hermes reads it as "" (see hermesStripsCmdline).
// _scoped_lock_record_is_stale tests `is not None` instead, so there a
// blank line is read, and no gateway's.
func runtimeCmdlineRead(argv []string) bool {
	return argv != nil && !(hermesStripsCmdline && joinArgv(argv) == "")
}

// unreadable is what Hermes does with a record _read_json_file returns
// None for: acquire_scoped_lock unlinks it at once. Stricter than Hermes:
// an empty or cut-short one younger than Grace is kept, since its writer
// may be between its O_EXCL create and its write. The rest is moved
// aside, which frees the name as an unlink would.
func (r *rules) unreadable(f fileFacts, err error) decision {
	var ce *CorruptError
	if errors.As(err, &ce) && (ce.tooLarge || ce.pythonOnly || ce.hermesRaises) {
		// It may be a record Hermes reads and keeps: judged by nobody
		// here, so kept.
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: oneLine(err.Error()) + "; kept unjudged"}
	}
	if mayBeMidWrite(f.data) && r.young(f.mtime) {
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: "recently written, maybe mid-write: " + oneLine(err.Error())}
	}
	return decision{verdict: procstate.Unknown, action: ActionQuarantine, reason: oneLine(err.Error())}
}

func (r *rules) young(t time.Time) bool { return r.now.Sub(t) < Grace }

// readRaises reports whether Hermes' _read_json_file raises on a file the
// one reader found err in, so that the Hermes code reading it removes
// nothing.
func readRaises(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) && ce.hermesRaises
}

// usable is the one reader's error for a record, or, when it reads but
// names no pid, that.
func usable(f fileFacts) error {
	if f.err == nil && !f.rec.pidOK && !f.rec.pidRaises {
		return &CorruptError{Reason: `no usable "pid"`}
	}
	return f.err
}

// runtimeLockFile judges gateway.lock, found held or free
// (is_gateway_runtime_lock_active); its record is judged for the report.
// Stricter than Hermes, whose _cleanup_invalid_pid_path unlinks a free
// one: it is never deleted, since deleting it could race with a gateway
// opening it, a lock nobody holds is harmless, and its presence is what
// tells a current Hermes home from an older one.
func (r *rules) runtimeLockFile(f fileFacts, held bool) decision {
	var d decision
	if f.err == nil {
		d = decide(f.rec, r.runtimeRecord(f.rec))
	}
	if held {
		reason := "locked by a live process"
		if f.err == nil {
			reason += "; record: " + d.verdict.String()
		}
		d.verdict, d.action, d.reason = procstate.Alive, ActionKeep, reason
		return d
	}
	if f.err != nil || !d.verdict.Stale() {
		d.verdict = procstate.Dead
	}
	d.action, d.reason = ActionOK, "lock not held; the next gateway takes it over"
	return d
}

// runningStates are the gateway_state values get_runtime_status_running_pid
// believes (all but stopped, startup_failed and none).
var runningStates = map[string]bool{"starting": true, "running": true, "draining": true, "degraded": true}

// runtimeStatus is get_runtime_status_running_pid on gateway_state.json
// (nil when absent or unreadable). ours: it names a live gateway of this
// home, or Hermes' own check raises on it (a list or object for
// gateway_state, or a file its reader raises on), since Hermes then
// removes nothing. held: ours, or it names a live gateway of another
// profile, which the start-up's unscoped call counts as running too (see
// ruling.elsewhere), so that Hermes removes nothing either.
func (r *rules) runtimeStatus(f *fileFacts) (ours, held bool) {
	switch {
	case f == nil:
		return false, false
	case f.err != nil:
		return readRaises(f.err), readRaises(f.err)
	case f.rec.stateRaises:
		return true, true
	case f.rec.stateNone:
		return false, false
	}
	rl := r.runtimeRecord(f.rec)
	return rl.keep, rl.keep || rl.elsewhere
}

// keptElsewhere is a file whose record names a live gateway of another
// profile (ruling.elsewhere): Hermes' start-up counts it as running and
// removes nothing, its scoped readers call it not this home's and remove
// nothing either. Kept, and named no gateway of this home.
func keptElsewhere(rec hermesRecord, rl ruling) decision {
	d := decide(rec, rl)
	d.verdict, d.action = procstate.Unknown, ActionKeep
	d.reason = rl.reason + "; Hermes' own start-up counts it as running and removes nothing: kept"
	return d
}

// stateFile applies get_runtime_status_running_pid to gateway_state.json:
// a record that says it runs must name a live gateway of this home, or it
// is marked stopped.
func (r *rules) stateFile(f fileFacts) decision {
	switch {
	case f.err != nil:
		// Hermes replaces a torn state file on its next write.
		return decision{action: ActionOK, reason: oneLine(f.err.Error()) + "; the gateway rewrites it"}
	case !f.rec.pidOK:
		return decision{action: ActionOK, reason: "names no process"}
	}
	rl := r.runtimeRecord(f.rec)
	d := decide(f.rec, rl)
	switch st := f.rec.gatewayState; {
	case rl.keep:
	case rl.elsewhere && runningStates[st]:
		return keptElsewhere(f.rec, rl)
	case runningStates[st]:
		d.action = ActionMarkStopped
		d.reason = fmt.Sprintf("says %s but owner is %s (%s)", st, rl.verdict, rl.reason)
	default:
		d.action, d.reason = ActionOK, "says "+st
	}
	return d
}
