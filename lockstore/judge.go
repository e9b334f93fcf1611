package lockstore

// This file holds Hermes' own judging rules (gateway/status.py of
// NousResearch/hermes-agent @ 00067189), written to read like them, plus
// the few rules by which we are stricter, each marked "Stricter than
// Hermes". docs/reliability.md has the conformance table that tries them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// GatewaySubcommand mirrors Hermes' _gateway_command_subcommand: it
// returns the gateway subcommand a command line runs ("run", "restart",
// "-v", ...), and false when the line is not a Hermes gateway command.
// Tokens are split quote-aware, unquoted, lower-cased, with `\` read as
// `/`; `-p X`, `--profile X`, `-p=X` and `--profile=X` are dropped
// anywhere, and a bare trailing `gateway` means `run`.
func GatewaySubcommand(cmdline string) (string, bool) {
	if cmdline == "" {
		return "", false
	}
	raw := shlexTokens(cmdline)
	tokens := make([]string, len(raw))
	basenames := make([]string, len(raw))
	for i, t := range raw {
		t = strings.ToLower(strings.ReplaceAll(strings.Trim(t, `"'`), `\`, "/"))
		tokens[i] = t
		basenames[i] = t[strings.LastIndexByte(t, '/')+1:]
	}
	if len(tokens) == 0 {
		return "", false
	}
	// Gateway-dedicated entry points carry no subcommand.
	for _, t := range tokens {
		if t == "gateway/run.py" || strings.HasSuffix(t, "/gateway/run.py") {
			return "run", true
		}
	}
	for _, b := range basenames {
		if b == "hermes-gateway" || b == "hermes-gateway.exe" {
			return "run", true
		}
	}
	joined := strings.Join(tokens, " ")
	entry := strings.Contains(joined, "hermes_cli.main") || strings.Contains(joined, "hermes_cli/main.py")
	for _, b := range basenames {
		entry = entry || b == "hermes" || b == "hermes.exe"
	}
	if !entry {
		return "", false
	}
	// A profile selector consumes its value, even one named "gateway".
	var filtered []string
	skip := false
	for _, t := range tokens {
		switch {
		case skip:
			skip = false
		case t == "--profile" || t == "-p":
			skip = true
		case strings.HasPrefix(t, "--profile=") || strings.HasPrefix(t, "-p="):
		default:
			filtered = append(filtered, t)
		}
	}
	for i, t := range filtered {
		if t == "gateway" {
			if i+1 < len(filtered) {
				return filtered[i+1], true
			}
			return "run", true
		}
	}
	return "", false
}

// shlexTokens splits like Python's shlex.split(s, posix=False): a token
// that opens with a quote runs to the matching quote, quotes inside a word
// are plain characters, and an unclosed quote falls back to a whitespace
// split, as Hermes does on the ValueError.
func shlexTokens(s string) []string {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case space(c):
			i++
		case c == '"' || c == '\'':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return strings.Fields(s)
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(s) && !space(s[j]) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

// joinArgv is how Hermes sees a command line: argv joined with spaces.
func joinArgv(argv []string) string { return strings.TrimSpace(strings.Join(argv, " ")) }

// IsGatewayRun mirrors looks_like_gateway_command_line: a gateway `run`.
// Hermes uses it for scoped locks.
func IsGatewayRun(argv []string) bool {
	sub, ok := GatewaySubcommand(joinArgv(argv))
	return ok && sub == "run"
}

// IsGatewayRuntime mirrors looks_like_gateway_runtime_command_line: `run`
// or `restart`, since a manual `hermes gateway restart` runs the gateway
// in-process. Hermes uses it for pid, lock and state records.
func IsGatewayRuntime(argv []string) bool {
	sub, ok := GatewaySubcommand(joinArgv(argv))
	return ok && (sub == "run" || sub == "restart")
}

// IsGatewayArgv reports whether argv can host a gateway: Hermes' runtime
// rule (IsGatewayRuntime), or our own demo gateway, whose argv carries
// the demo-gateway subcommand.
func IsGatewayArgv(argv []string) bool { return IsGatewayRuntime(argv) || isDemoGateway(argv) }

// isDemoGateway: the demo gateway is a command line the supervisor itself
// starts, so it counts as a gateway wherever it is judged.
func isDemoGateway(argv []string) bool { return len(argv) > 1 && argv[1] == "demo-gateway" }

// hermesRecord is a record as Hermes' _read_json_file sees it, with the
// fields its rules read.
type hermesRecord struct {
	Record
	// pidOK: Hermes' _pid_from_record got a pid (int() of the value).
	pidOK bool
	// startBogus: start_time is there but is no number, so it never
	// equals a live start time.
	startBogus bool
	// argvList: argv is a non-empty JSON list; argvLine is it joined as
	// Python's " ".join(str(part)) would.
	argvList bool
	argvLine string
	// writer is the uid owning the file, set only for files the writer
	// creates afresh (pid file, scoped locks): see procstate.OwnerConflict.
	writer *uint32
}

// parseHermesRecord reads a record as Hermes does: a JSON object (after a
// UTF-8 BOM and surrounding whitespace), or, where barePID allows it (pid
// and lock files), a legacy bare integer. Anything else is an error:
// ErrEmpty for an empty file, *CorruptError otherwise.
func parseHermesRecord(data []byte, barePID bool) (hermesRecord, error) {
	var h hermesRecord
	if len(data) > MaxRecordSize {
		return h, &CorruptError{Reason: fmt.Sprintf("more than %d bytes, larger than any record", MaxRecordSize)}
	}
	data = bytes.TrimSpace(bytes.TrimPrefix(data, bom))
	if len(data) == 0 {
		return h, ErrEmpty
	}
	if !utf8.Valid(data) {
		return h, &CorruptError{Reason: "not UTF-8 text"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		if n, ok := pythonInt(string(data)); ok && data[0] != '{' {
			if !barePID {
				return h, &CorruptError{Reason: "a bare pid, which Hermes reads as no record here"}
			}
			h.PID, h.pidOK, h.Legacy = n, true, true
			return h, nil
		}
		if err == nil {
			return h, &CorruptError{Reason: "not a JSON object: " + quoteStart(data)}
		}
		if data[0] != '{' {
			return h, &CorruptError{Reason: "neither JSON nor a bare pid: " + quoteStart(data)}
		}
		return h, &CorruptError{Reason: "not JSON: " + describeJSONError(err)}
	}
	if raw, ok := fields["pid"]; ok {
		h.PID, h.pidOK = pidValue(raw)
	}
	if raw, ok := fields["start_time"]; ok && string(raw) != "null" {
		var f float64
		if json.Unmarshal(raw, &f) == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			v := int64(f)
			h.StartTime = &v
		} else {
			h.startBogus = true
		}
	}
	var list []json.RawMessage
	if json.Unmarshal(fields["argv"], &list) == nil && len(list) > 0 {
		h.argvList = true
		parts := make([]string, len(list))
		for i, p := range list {
			var s string
			if json.Unmarshal(p, &s) != nil {
				s = string(p) // close enough to Python's str() of a number
			}
			parts[i] = s
		}
		h.Argv, h.argvLine = parts, strings.Join(parts, " ")
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(fields[k], &s)
		return s
	}
	h.Kind, h.HermesHome, h.Scope, h.IdentityHash = str("kind"), str("hermes_home"), str("scope"), str("identity_hash")
	h.UpdatedAt, h.Profile = str("updated_at"), str("profile")
	return h, nil
}

// pidValue mirrors _pid_from_record, int(record["pid"]): an integer, a
// float (truncated) or a numeric string is a pid; null, a list or a word
// is not. A pid that cannot be a process id is no pid either.
func pidValue(raw json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return pythonInt(s)
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || f < 1 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// pythonInt parses like Python's int() of a string: surrounding
// whitespace and a sign are allowed. Only positive 32-bit values are pids.
func pythonInt(s string) (int, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int(n), true
}

// recordLooksLikeGateway mirrors _record_looks_like_gateway: the record
// says it is a gateway and its argv is a run-or-restart command line.
func (h hermesRecord) recordLooksLikeGateway() bool {
	if h.Kind != GatewayKind || !h.argvList {
		return false
	}
	sub, ok := GatewaySubcommand(h.argvLine)
	return ok && (sub == "run" || sub == "restart")
}

// ruling is one rule's answer on one record.
type ruling struct {
	keep    bool
	verdict procstate.Verdict
	reason  string
}

func keep(v procstate.Verdict, reason string) ruling  { return ruling{true, v, reason} }
func stale(v procstate.Verdict, reason string) ruling { return ruling{false, v, reason} }

// rules applies Hermes' rules for one sweep. look is the one way it sees
// a process (cached per pid); own are the command lines the supervisor
// itself starts, which count as gateways.
type rules struct {
	home string
	now  time.Time
	own  [][]string
	look func(pid int) (procstate.Live, error)
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

// live is _pid_exists plus one look: a zombie counts as dead, a stopped
// process as alive. It returns a ruling when the process settles it.
func (r *rules) live(h hermesRecord) (procstate.Live, *ruling) {
	if !h.pidOK {
		rl := stale(procstate.Dead, "names no pid")
		return procstate.Live{}, &rl
	}
	l, err := r.look(h.PID)
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
		rl = stale(procstate.Reused, fmt.Sprintf("start time %d differs from recorded %d", *l.StartTime, *h.StartTime))
	default:
		return l, nil
	}
	return l, &rl
}

// wroteItself is the stricter-than-Hermes rule: the live process has the
// record's pid, its known start time and its full argv, so it wrote the
// record, whatever its command line looks like.
func (r *rules) wroteItself(h hermesRecord, l procstate.Live) bool {
	return procstate.StartTimesEqual(h.StartTime, l, r.now) && l.Argv != nil && procstate.ArgvMatches(h.Argv, l.Argv)
}

// homeMatches mirrors _pid_record_belongs_to_current_profile: a record
// without hermes_home (older Hermes) proves nothing and passes.
func (r *rules) homeMatches(h hermesRecord) bool {
	return h.HermesHome == "" || sameHome(h.HermesHome, r.home)
}

// runtimeRecord decides whether a pid, lock or state record names this
// home's running gateway, as get_running_pid and
// get_runtime_status_running_pid try each record: alive (stopped counts),
// no start-time conflict, home matching, and a run-or-restart command line
// (the record's own argv when the live one cannot be read).
func (r *rules) runtimeRecord(h hermesRecord) ruling {
	l, settled := r.live(h)
	if settled != nil {
		return *settled
	}
	if !r.homeMatches(h) {
		return stale(procstate.Reused, "record belongs to another Hermes home ("+h.HermesHome+")")
	}
	stopped := ""
	if l.Stopped {
		stopped = "; stopped, which Hermes still counts as running"
	}
	switch {
	case r.wroteItself(h, l):
		return keep(procstate.Alive, "same process (start time and command line match)"+stopped)
	case l.Argv != nil && r.gateway(l.Argv, true):
		return keep(procstate.Alive, "a live gateway"+stopped)
	case l.Argv != nil:
		return stale(procstate.Reused, "pid now runs "+quoteArgv(l.Argv))
	case h.recordLooksLikeGateway():
		return keep(procstate.Alive, "command line unreadable; the record is a gateway's"+stopped)
	}
	return stale(procstate.Reused, "command line unreadable and the record is not a gateway's")
}

// scopedRecord mirrors _scoped_lock_record_is_stale: stale when the pid is
// missing or dead, the start times conflict, the process is stopped, a
// readable command line is not a gateway `run`, or, with the command line
// unreadable and a start time unknown, the record is not a gateway's.
func (r *rules) scopedRecord(h hermesRecord) ruling {
	l, settled := r.live(h)
	if settled != nil {
		return *settled
	}
	switch {
	case l.Stopped && hermesSeesStopped:
		return stale(procstate.Stopped, "process is stopped")
	case r.wroteItself(h, l):
		// Stricter than Hermes: e.g. `python3 gw.py gateway run`, which
		// Hermes calls no gateway, keeps the lock it wrote.
		return keep(procstate.Alive, "same process (start time and command line match)")
	case l.Argv != nil && r.gateway(l.Argv, false):
		return keep(procstate.Alive, "a live gateway")
	case l.Argv != nil:
		return stale(procstate.Reused, "pid now runs "+quoteArgv(l.Argv)+", not a gateway run")
	case (h.StartTime == nil || l.StartTime == nil) && !h.recordLooksLikeGateway():
		return stale(procstate.Reused, "command line unreadable, start time unknown, and the record is not a gateway's")
	}
	return keep(procstate.Alive, "command line unreadable; start time matches")
}

// markerStale mirrors _marker_is_stale: older than the TTL, or a time
// Python's fromisoformat cannot read with an offset. A marker dated in the
// future is fresh, as in Hermes.
func markerStale(writtenAt string, now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, writtenAt)
	return err != nil || now.Sub(t) > MarkerTTL
}

func quoteArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

// mayBeMidWrite reports whether an unreadable record could be one a writer
// is still filling: empty (between the O_EXCL create and the write), or
// JSON cut short.
func mayBeMidWrite(data []byte) bool {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, bom))
	return len(data) == 0 || (data[0] == '{' && !json.Valid(data))
}
