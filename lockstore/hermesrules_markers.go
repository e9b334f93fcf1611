package lockstore

// _marker_is_stale and _read_live_pid_marker of status.py (see
// hermesrules.go for the map): the planned-stop and takeover markers.

import (
	"strconv"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// markerStale mirrors _marker_is_stale: older than the TTL, or a time
// datetime.fromisoformat cannot read (in 3.11 nor in 3.14, which current
// Hermes runs on and which also reads 24:00), or reads without an
// offset (subtracting it from an aware now raises TypeError). A marker
// dated in the future is fresh, as in Hermes. It is the one freshness
// rule for markers: the sweep's, and that of PlannedStop.Fresh.
func markerStale(writtenAt string, now time.Time) bool {
	t, aware, err := pyparse.FromISOFormat(writtenAt)
	return err != nil || !aware || now.Sub(t) > MarkerTTL
}

// markerFile applies _read_live_pid_marker to a planned-stop or takeover
// marker (both carry target_pid, target_start_time and written_at). What
// _read_json_file cannot read, and `{}`, Hermes neither uses nor removes:
// kept. One without a target pid, or older than its TTL, is unlinked; a
// fresh one stays until its target consumes it or it expires, whoever it
// names.
func (r *rules) markerFile(f fileFacts) decision {
	m, err := parsePlannedStop(f.data)
	switch {
	case err != nil:
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: "unreadable (" + oneLine(err.Error()) + "): Hermes neither uses nor removes it"}
	case m.empty:
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: "an empty object: Hermes neither uses nor removes it"}
	case m.targetRaises:
		return decision{verdict: procstate.Unknown, action: ActionKeep, reason: "its target_pid is an infinite number, on which Hermes' own check raises; kept"}
	}
	d := decision{record: &Record{PID: m.TargetPID, StartTime: m.TargetStartTime}, verdict: procstate.Dead, action: ActionSweep}
	switch {
	case !m.targetOK:
		d.reason = "names no target pid"
	case m.WrittenAt == "":
		d.reason = "undated (no written_at): counts as expired"
	case markerStale(m.WrittenAt, r.now):
		d.reason = "expired (written " + strconv.Quote(m.WrittenAt) + ")"
	default:
		// Its target is not looked at: Hermes keeps a fresh marker
		// whoever it names, and only the target itself consumes it.
		d.verdict, d.action = procstate.Unknown, ActionKeep
		d.reason = "fresh (written " + m.WrittenAt + "): honoured until its target consumes it or it expires"
	}
	return d
}
