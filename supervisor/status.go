package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// State is the supervisor's lifecycle state.
type State string

// The states of the supervisor's one state machine.
const (
	Starting State = "starting"
	Running  State = "running"
	Backoff  State = "backoff"
	Stopping State = "stopping"
	Stopped  State = "stopped"
	Failed   State = "failed"
	// Served: another gateway (the root's multiplexer, or the host
	// gateway) serves this profile, and Hermes refuses a second one; the
	// supervisor watches it and starts its own gateway once it goes.
	Served State = "served"
	// Parked: <home>/gateway.parked says no gateway is to run for this
	// profile; the supervisor starts one once the file is gone.
	Parked State = "parked"
)

// ServedBy names the gateway that serves a profile in state Served.
type ServedBy struct {
	PID  int    `json:"pid"`
	Home string `json:"home,omitempty"`
	// Via names the file that says so: the root's gateway_state.json
	// (served_profiles) or the lock dir's host-gateway.json.
	Via string `json:"via"`
}

// Child describes the gateway process the supervisor owns.
type Child struct {
	PID       int       `json:"pid"`
	StartTime *int64    `json:"start_time"`
	Argv      []string  `json:"argv"`
	StartedAt time.Time `json:"started_at"`
	Ready     bool      `json:"ready"`
	// Adopted marks a gateway left running by a previous supervisor.
	Adopted bool `json:"adopted,omitempty"`
	// NonceHash is the hash of the nonce in the gateway's environment
	// (see EnvNonce): what proves it ours to a successor.
	NonceHash string `json:"nonce_sha256,omitempty"`
	// Orphaned marks a gateway still running after its supervisor was
	// killed, proven by its nonce; the next supervisor reclaims it.
	Orphaned bool `json:"orphaned,omitempty"`
	// ReadyBy says how readiness was judged: sd_notify READY=1,
	// gateway_state.json, gateway.pid, or the ready timeout.
	ReadyBy string `json:"ready_by,omitempty"`
	// Status is the gateway's own last STATUS= line.
	Status string `json:"status,omitempty"`
	// Watchdog is set when hang detection is on.
	Watchdog *WatchdogStatus `json:"watchdog,omitempty"`
	// NotifyIgnored counts sd_notify datagrams from outside the gateway's tree.
	NotifyIgnored int `json:"notify_ignored,omitempty"`
	// KillAt is when a stop kills the gateway's tree if it has not exited:
	// the stop timeout, plus what the gateway's EXTEND_TIMEOUT_USEC added
	// within --max-stop-extension.
	KillAt *time.Time `json:"kill_at,omitempty"`
	// Cgroup is the cgroup the supervisor made for this gateway, whose
	// every member dies with it; empty when no cgroup was delegated to us
	// and the process group alone holds its tree.
	Cgroup string `json:"cgroup,omitempty"`
	// Gateway is the process gateway.pid names when it is not the child
	// itself: pip's and uv's hermes.exe console launcher runs python.exe
	// as its child, so PID above is then the launcher's. Nil until found
	// in the child's tree, and when the child is the gateway.
	Gateway *Process `json:"gateway,omitempty"`
}

// Process names one process by its pid and start time (in Hermes' units;
// nil when unknown).
type Process struct {
	PID       int    `json:"pid"`
	StartTime *int64 `json:"start_time"`
}

// Identity returns the child's process identity.
func (c *Child) Identity() procstate.Identity {
	return procstate.Identity{PID: c.PID, StartTime: c.StartTime, Argv: c.Argv}
}

// Status is what `hermes-supervisor status` reports.
type Status struct {
	State      State  `json:"state"`
	Reason     string `json:"reason,omitempty"`
	Home       string `json:"home"`
	LockDir    string `json:"lock_dir"`
	Supervisor struct {
		PID       int      `json:"pid"`
		StartTime *int64   `json:"start_time"`
		Argv      []string `json:"argv"`
	} `json:"supervisor,omitzero"`
	Child     *Child            `json:"child,omitempty"`
	Restarts  int               `json:"restarts"`
	LastExit  *Exit             `json:"last_exit,omitempty"`
	NextStart *time.Time        `json:"next_start,omitempty"`
	Locks     []lockstore.Entry `json:"locks,omitempty"`
	// LocksAt is when Locks were read: a status answers from memory and
	// never reads the lock dir itself (the supervisor looks again, off
	// its loop, when they are older than 30 s).
	LocksAt *time.Time `json:"locks_at,omitempty"`
	// Busy says what long step the supervisor is in ("sweeping ..."),
	// since BusySince; the rest of the answer is as of its start.
	Busy      string     `json:"busy,omitempty"`
	BusySince *time.Time `json:"busy_since,omitempty"`
	UpdatedAt time.Time  `json:"updated_at,omitzero"`
	// StartupError says why the last start could not happen (a missing,
	// read-only or full home or lock dir, or a deleted home); such failures
	// never count toward the crash loop and are retried until they clear.
	StartupError string `json:"startup_error,omitempty"`
	// BootID names the boot the supervisor ran in (procstate.BootID): a
	// successor trusts nothing a file of another boot names.
	BootID string `json:"boot_id,omitempty"`
	// NonceHash is the hash of this run's nonce (see EnvNonce).
	NonceHash string `json:"nonce_sha256,omitempty"`
	// Command is the gateway command line the supervisor launches.
	Command []string `json:"command,omitempty"`
	// ExternalSupervisor says whether the command carries Hermes'
	// --external-supervisor, and why.
	ExternalSupervisor *ExtSup `json:"external_supervisor,omitempty"`
	// ServedBy is set in state Served.
	ServedBy *ServedBy `json:"served_by,omitempty"`
	// Control is the address the control endpoint listens at: Address of
	// the home, or, when that could not be made, another that clients find
	// only here. Empty with ControlError when the supervisor runs without one.
	Control string `json:"control,omitempty"`
	// ControlError says why no control endpoint could be made.
	ControlError string `json:"control_error,omitempty"`
	// Source says where the answer came from: the live "endpoint", or the
	// "state-file" a supervisor left behind.
	Source string `json:"source"`
	// Stop is how long a stop of this supervisor may take; clients wait
	// that long for one (see StopBudget.Bounds). Nil from a supervisor of a
	// version that did not say.
	Stop *StopBudget `json:"stop,omitempty"`
}

// StopBudget is how long a stop may take, as the supervisor keeps it: it
// kills the gateway's tree Timeout after the stop begins, later by what
// the gateway asks for with EXTEND_TIMEOUT_USEC up to MaxExtension, and
// gives the killed tree KillGrace to go.
type StopBudget struct {
	Timeout Duration `json:"timeout"`
	// MaxExtension is absent when the gateway may add nothing.
	MaxExtension Duration `json:"max_extension,omitempty"`
	KillGrace    Duration `json:"kill_grace"`
}

// Up reports whether the supervisor is working to keep a gateway running
// (LSB status 0): anything but stopped, failed or parked. Served is up:
// the profile's gateway runs, in another process.
func (s *Status) Up() bool { return s.State != Stopped && s.State != Failed && s.State != Parked }

// WriteText prints the status for people, at now. Every string in it may
// come from a forged state file or from the gateway (STATUS=), so each
// passes through termtext.Quote: no control character reaches the
// terminal.
func (s *Status) WriteText(w io.Writer, now time.Time) error {
	q := termtext.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "state:      %s", q(string(s.State)))
	if s.Reason != "" {
		fmt.Fprintf(&b, " (%s)", q(s.Reason))
	}
	fmt.Fprintf(&b, "\nhome:       %s\nlock dir:   %s\n", q(s.Home), q(s.LockDir))
	if s.Supervisor.PID == 0 {
		b.WriteString("supervisor: none has run for this home\n")
	} else {
		fmt.Fprintf(&b, "supervisor: pid %d (%s)\n", s.Supervisor.PID, q(s.Source))
	}
	if c := s.Child; c != nil {
		if c.Gateway != nil {
			fmt.Fprintf(&b, "gateway:    pid %d (its launcher: pid %d), up %s", c.Gateway.PID, c.PID, now.Sub(c.StartedAt).Round(time.Second))
		} else {
			fmt.Fprintf(&b, "gateway:    pid %d, up %s", c.PID, now.Sub(c.StartedAt).Round(time.Second))
		}
		switch {
		case c.Orphaned:
			b.WriteString(", unsupervised: its supervisor was killed; the next `hermes-supervisor run` reclaims it")
		case !c.Ready:
			b.WriteString(", not ready yet")
		}
		if c.Adopted {
			b.WriteString(", left by a previous supervisor")
		}
		if c.ReadyBy != "" && !c.Orphaned {
			// An orphan's readiness was judged by the supervisor that died.
			fmt.Fprintf(&b, ", ready by %s", q(c.ReadyBy))
		}
		b.WriteByte('\n')
		if c.Status != "" {
			fmt.Fprintf(&b, "gateway says: %s\n", q(c.Status))
		}
		if w := c.Watchdog; w != nil {
			writeWatchdog(&b, w, now)
		}
		if c.Cgroup != "" {
			fmt.Fprintf(&b, "cgroup:     %s\n", q(c.Cgroup))
		}
		if c.NotifyIgnored > 0 {
			fmt.Fprintf(&b, "notify:     %d datagrams from outside the gateway's tree ignored\n", c.NotifyIgnored)
		}
	} else if sb := s.ServedBy; sb != nil {
		fmt.Fprintf(&b, "gateway:    served by pid %d (home %s, per %s)\n", sb.PID, q(sb.Home), q(sb.Via))
	} else {
		b.WriteString("gateway:    not running\n")
	}
	if e := s.ExternalSupervisor; e != nil {
		fmt.Fprintf(&b, "--external-supervisor: %s\n", q(e.Why))
	}
	fmt.Fprintf(&b, "restarts:   %d\n", s.Restarts)
	if e := s.LastExit; e != nil {
		fmt.Fprintf(&b, "last exit:  %s at %s after %s\n", q(e.String()), e.At.Format(time.RFC3339), e.Uptime.Round(time.Millisecond))
	}
	if s.NextStart != nil {
		fmt.Fprintf(&b, "next start: in %s\n", s.NextStart.Sub(now).Round(time.Millisecond))
	}
	if s.Busy != "" && s.BusySince != nil {
		fmt.Fprintf(&b, "busy:       %s, for %s; the rest is as of its start\n", q(s.Busy), now.Sub(*s.BusySince).Round(time.Millisecond))
	}
	if len(s.Locks) == 0 {
		b.WriteString("locks:      none")
		if s.Child != nil && s.LocksAt == nil {
			b.WriteString(" known yet")
		}
		b.WriteString("\n")
	}
	for i, l := range s.Locks {
		label := "locks:      "
		if i > 0 {
			label = "            "
		}
		fmt.Fprintf(&b, "%s%s (%s)\n", label, q(l.Path), q(string(l.Kind)))
	}
	if len(s.Locks) > 0 && s.LocksAt != nil {
		fmt.Fprintf(&b, "            (as read %s ago)\n", now.Sub(*s.LocksAt).Round(time.Second))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrNoState reports that no supervisor has left a state file.
var ErrNoState = errors.New("no supervisor state file")

// maxStatusFile bounds the state file we read: ours is a few hundred bytes,
// and a hostile one must not cost memory.
const maxStatusFile = 1 << 20

// ReadStatusFile reads the state file a supervisor keeps for shells that
// cannot reach its endpoint. A symlink, FIFO, device or file over 1 MiB is
// refused (see safefs.ReadRegularFile), never followed or waited on.
func ReadStatusFile(path string) (*Status, error) {
	b, err := safefs.ReadRegularFile(path, maxStatusFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", path, ErrNoState)
	case errors.Is(err, safefs.ErrNotRegular), errors.Is(err, safefs.ErrTooBig):
		return nil, &lockstore.FileError{Path: path, Op: "read", Err: err, Hint: "it is not a state file any supervisor wrote; remove it"}
	case err != nil:
		return nil, &lockstore.FileError{Path: path, Op: "read", Err: err, Hint: "run status as a user that may read the Hermes home"}
	}
	s, err := parseStatusFile(b)
	if err != nil {
		return nil, &lockstore.FileError{Path: path, Op: "parse", Err: err, Hint: "the next supervisor start rewrites it; delete it if none runs"}
	}
	return s, nil
}

func parseStatusFile(b []byte) (*Status, error) {
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	s.Source = "state-file"
	if s.Child != nil {
		// Only the live supervisor may name the gateway's cgroup: one read
		// from a file may be stale or forged, and must not be shown as if
		// it held the gateway's tree, nor be there for code to act on.
		s.Child.Cgroup = ""
	}
	return &s, nil
}

func writeStatusFile(path string, s *Status, sync bool) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// 0644: status must answer for any user that may read the home.
	if !sync {
		return lockstore.WriteFileAtomicUnsynced(path, append(b, '\n'), 0o644)
	}
	return lockstore.WriteFileAtomic(path, append(b, '\n'), 0o644)
}

func writeWatchdog(b *strings.Builder, w *WatchdogStatus, now time.Time) {
	b.WriteString("watchdog:   ")
	switch {
	case w.ExitBy != nil:
		fmt.Fprintf(b, "the gateway said STOPPING=1: taken down as hung if it still runs in %s", max(w.ExitBy.Sub(now), 0).Round(time.Millisecond))
	case w.Interval > 0 && w.Armed && w.LastKeepAlive != nil:
		fmt.Fprintf(b, "keep-alive every %s, last %s ago", time.Duration(w.Interval), now.Sub(*w.LastKeepAlive).Round(time.Millisecond))
	case w.Interval > 0:
		fmt.Fprintf(b, "keep-alive every %s, not armed (the gateway has sent no READY=1 or WATCHDOG=1)", time.Duration(w.Interval))
	default:
		b.WriteString("no sd_notify keep-alive")
	}
	if w.HangAfter > 0 {
		seen := "not seen yet"
		if w.HeartbeatSeen {
			seen = "seen"
		}
		fmt.Fprintf(b, "; heartbeat older than %s is a hang (%s)", time.Duration(w.HangAfter), seen)
	}
	b.WriteByte('\n')
}
