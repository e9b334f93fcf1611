package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
)

// Hermes' exit codes (gateway/restart.py, hermes_cli/gateway.py).
const (
	// ExitRestart asks for an immediate restart (SIGUSR1, /restart, update).
	ExitRestart = 75
	// ExitConfig is EX_CONFIG: restarting cannot help until a human acts.
	ExitConfig = 78
)

// Policy decides what follows a child's exit.
type Policy struct {
	// InitialBackoff is the delay before the second restart of a streak;
	// the first restart after a healthy run is immediate.
	InitialBackoff time.Duration `json:"initial_backoff"`
	// MaxBackoff caps the doubling delay.
	MaxBackoff time.Duration `json:"max_backoff"`
	// ResetAfter is the uptime after which a run counts as healthy and the
	// failure streak is forgotten.
	ResetAfter time.Duration `json:"reset_after"`
	// Jitter spreads each delay by up to this fraction either way, so that
	// many supervisors on one host do not restart in lockstep.
	Jitter float64 `json:"jitter"`
	// CrashLoopMax failures inside CrashLoopWindow, with no healthy run
	// between them, mean the gateway cannot run: the supervisor fails.
	CrashLoopMax    int           `json:"crash_loop_max"`
	CrashLoopWindow time.Duration `json:"crash_loop_window"`
	// MinUptime guards the exit-75 fast path: a restart request sooner
	// than this after start counts as a failure (Hermes #84472).
	MinUptime time.Duration `json:"min_uptime"`
	// HandoverGrace is how long a named profile's supervisor waits, after
	// the gateway that served the profile went, before it starts its own:
	// Hermes' own service managers bring that gateway back within it
	// (systemd after 5 s, Windows' task within a minute), and a profile
	// gateway of ours running when it boots keeps it from serving any
	// other profile (Hermes' multiplex preflight).
	HandoverGrace time.Duration `json:"handover_grace"`
}

// DefaultPolicy returns the documented defaults.
func DefaultPolicy() Policy {
	return Policy{
		InitialBackoff:  time.Second,
		MaxBackoff:      60 * time.Second,
		ResetAfter:      60 * time.Second,
		Jitter:          0.2,
		CrashLoopMax:    10,
		CrashLoopWindow: 10 * time.Minute,
		MinUptime:       time.Second,
		HandoverGrace:   time.Minute,
	}
}

// ErrBackoffOrder reports a MaxBackoff below InitialBackoff: the one rule
// of a Policy that joins two settings, which a caller that knows where each
// came from can say more of.
var ErrBackoffOrder = errors.New("max_backoff must not be below initial_backoff")

// Validate reports the first setting that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.InitialBackoff <= 0:
		return fmt.Errorf("initial_backoff must be positive, got %s", p.InitialBackoff)
	case p.MaxBackoff < p.InitialBackoff:
		return fmt.Errorf("%w: max_backoff is %s, initial_backoff %s", ErrBackoffOrder, p.MaxBackoff, p.InitialBackoff)
	case p.ResetAfter <= 0:
		return fmt.Errorf("reset_after must be positive, got %s", p.ResetAfter)
	case p.Jitter < 0 || p.Jitter >= 1:
		return fmt.Errorf("jitter must be in [0, 1), got %g", p.Jitter)
	case p.CrashLoopMax < 1:
		return fmt.Errorf("crash_loop_max must be at least 1, got %d", p.CrashLoopMax)
	case p.CrashLoopWindow <= 0:
		return fmt.Errorf("crash_loop_window must be positive, got %s", p.CrashLoopWindow)
	case p.MinUptime < 0:
		return fmt.Errorf("min_uptime must not be negative, got %s", p.MinUptime)
	case p.HandoverGrace < 0:
		return fmt.Errorf("handover_grace must not be negative, got %s", p.HandoverGrace)
	}
	return nil
}

// Exit describes how one run of the child ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the child or it
	// never started.
	Code int `json:"code"`
	// Signal names the terminating signal, if any.
	Signal string `json:"signal,omitempty"`
	// StartError is set when the child could not be started at all.
	StartError string `json:"start_error,omitempty"`
	// Orphan says how a previous supervisor's gateway ended, which we
	// could watch but not wait(2) for.
	Orphan string `json:"orphan,omitempty"`
	// Reason is set when the supervisor ended the run on its own, as
	// ReasonWatchdog for a hung gateway.
	Reason string `json:"reason,omitempty"`
	// Unkilled lists the processes of the gateway's tree still alive when
	// the supervisor gave up on them, KillGrace after it killed the tree.
	Unkilled []proctree.Unkilled `json:"unkilled,omitempty"`
	// At is when the exit was seen.
	At time.Time `json:"at"`
	// Uptime is how long the run lasted. In JSON it is written twice, as
	// "uptime" (a duration string, "1m30.2s") and "uptime_seconds".
	Uptime time.Duration `json:"-"`
	// said is the end of what the gateway wrote (outputTail bytes): where
	// Hermes says why it refused to run. Never written anywhere.
	said []byte
	// seen, reaped and drained are when the root's exit was seen, its
	// tree killed and reaped, and its output read to the end, by the real
	// clock (zero where unknown): for the restart timing.
	seen, reaped, drained time.Time
}

// exitJSON is Exit as written: the uptime for people and for programs.
type exitJSON struct {
	Code          int                 `json:"code"`
	Signal        string              `json:"signal,omitempty"`
	StartError    string              `json:"start_error,omitempty"`
	Orphan        string              `json:"orphan,omitempty"`
	Reason        string              `json:"reason,omitempty"`
	Unkilled      []proctree.Unkilled `json:"unkilled,omitempty"`
	At            time.Time           `json:"at"`
	Uptime        string              `json:"uptime"`
	UptimeSeconds float64             `json:"uptime_seconds"`
}

// MarshalJSON writes the uptime as a duration string and in seconds.
func (e Exit) MarshalJSON() ([]byte, error) {
	return json.Marshal(exitJSON{Code: e.Code, Signal: e.Signal, StartError: e.StartError, Orphan: e.Orphan, Reason: e.Reason, Unkilled: e.Unkilled, At: e.At,
		Uptime: e.Uptime.Round(time.Millisecond).String(), UptimeSeconds: e.Uptime.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes, and the nanoseconds an
// older supervisor's state file holds.
func (e *Exit) UnmarshalJSON(b []byte) error {
	var v struct {
		exitJSON
		Uptime json.RawMessage `json:"uptime"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Exit{Code: v.Code, Signal: v.Signal, StartError: v.StartError, Orphan: v.Orphan, Reason: v.Reason, Unkilled: v.Unkilled, At: v.At,
		Uptime: time.Duration(v.UptimeSeconds * float64(time.Second))}
	var ns int64
	if json.Unmarshal(v.Uptime, &ns) == nil {
		e.Uptime = time.Duration(ns)
	}
	return nil
}

// String describes the exit in a few words.
func (e Exit) String() string {
	if len(e.Unkilled) > 0 {
		r := e
		r.Unkilled = nil
		return r.String() + "; could not kill " + DescribeUnkilled(e.Unkilled)
	}
	if e.Reason != "" {
		r := e
		r.Reason = ""
		return e.Reason + " (" + r.String() + ")"
	}
	switch {
	case e.StartError != "":
		return "failed to start: " + e.StartError
	case e.Signal != "":
		return "killed by " + e.Signal
	case e.Orphan != "":
		return "the previous supervisor's gateway " + e.Orphan
	}
	return fmt.Sprintf("exit %d", e.Code)
}

// Verdict is what the policy decided.
type Verdict uint8

const (
	// Restart means start again after Decision.Delay.
	Restart Verdict = iota
	// Fail means stop restarting until a human asks.
	Fail
)

// Decision is the policy's answer to one exit.
type Decision struct {
	Verdict Verdict
	Delay   time.Duration
	Reason  string
}

// History is the failure record the policy keeps between exits.
type History struct {
	// Streak counts failures since the last healthy run.
	Streak   int
	failures []time.Time
}

// Decide records e in h and returns what to do. rnd returns a number in
// [0, 1) for jitter; it is passed in so that tests are deterministic.
func (p Policy) Decide(h *History, e Exit, rnd func() float64) Decision {
	if e.StartError == "" && e.Uptime >= p.ResetAfter {
		// A healthy run: whatever failed before it is not a crash loop.
		h.Streak, h.failures = 0, h.failures[:0]
	}
	if e.StartError == "" && e.Signal == "" && e.Reason == "" {
		switch {
		case e.Code == ExitConfig:
			return Decision{Verdict: Fail, Reason: "gateway exited 78 (configuration error): fix the configuration, then run `hermes-supervisor restart`"}
		case e.Code == ExitRestart && e.Uptime >= p.MinUptime:
			return Decision{Verdict: Restart, Reason: "gateway asked for a restart (exit 75)"}
		}
	}
	h.Streak++
	h.failures = append(h.failures, e.At)
	cut := 0
	for cut < len(h.failures) && e.At.Sub(h.failures[cut]) >= p.CrashLoopWindow {
		cut++
	}
	h.failures = h.failures[cut:]
	if len(h.failures) >= p.CrashLoopMax {
		return Decision{Verdict: Fail, Reason: fmt.Sprintf(
			"crash loop: %d failures within %s, the last %s; see the gateway log, then run `hermes-supervisor restart`",
			len(h.failures), p.CrashLoopWindow, e)}
	}
	return Decision{Verdict: Restart, Delay: p.delay(h.Streak, rnd), Reason: e.String()}
}

// delay is zero for the first failure of a streak, so a gateway killed after
// a long healthy run is back at once, then doubles from InitialBackoff.
func (p Policy) delay(streak int, rnd func() float64) time.Duration {
	if streak <= 1 {
		return 0
	}
	// Jitter before the cap: --max-backoff is a promise, never exceeded.
	d := float64(p.InitialBackoff) * math.Pow(2, float64(streak-2))
	d *= 1 + p.Jitter*(2*rnd()-1)
	return time.Duration(min(d, float64(p.MaxBackoff)))
}
