package lockstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// WriteFileAtomic writes data to path through a temp file in the same
// directory, fsync and rename, so a reader sees the old or the new file and
// never a torn one. Hand-written: renameio does not support Windows.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, nil, true)
}

// WriteFileAtomicUnsynced is WriteFileAtomic without the fsyncs: a reader
// sees the old or the new file as long as the machine does not crash. It
// is for a file whose readers distrust what a crash of the machine leaves
// (the supervisor's state file names its boot).
func WriteFileAtomicUnsynced(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, nil, false)
}

// ReplaceFileAtomic is WriteFileAtomic for a file that may exist already:
// the new file keeps the old one's mode and, where the OS lets us, its
// owner, as Hermes' atomic_json_write does. perm is for a new file.
func ReplaceFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, true)
}

// replaceFile is ReplaceFileAtomic, with or without the fsyncs.
func replaceFile(path string, data []byte, perm os.FileMode, sync bool) error {
	fi, err := os.Stat(path)
	if err != nil {
		return writeAtomic(path, data, perm, nil, sync)
	}
	return writeAtomic(path, data, fi.Mode().Perm(), func(f *os.File) error { return keepOwner(f, fi) }, sync)
}

// writeAtomic is WriteFileAtomic with prep run on the temp file before it
// is synced and renamed.
func writeAtomic(path string, data []byte, perm os.FileMode, prep func(*os.File) error, sync bool) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fail(err)
	}
	if prep != nil {
		if err := prep(f); err != nil {
			return fail(err)
		}
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sync {
		syncDir(dir)
	}
	return nil
}

// WriteExclusive creates path with O_EXCL and writes rec as compact JSON, as
// Hermes' write_pid_file does: the exclusive create is the claim.
func WriteExclusive(path string, rec Record) error {
	b, err := rec.Encode()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// MarkerTTL is how long Hermes honours a planned-stop or takeover marker.
const MarkerTTL = 60 * time.Second

// markerTime is ISO 8601 with a numeric offset: Python's fromisoformat may
// reject a "Z", and then Hermes would count the marker as stale.
const markerTime = "2006-01-02T15:04:05.000000-07:00"

// PlannedStop is Hermes' .gateway-planned-stop.json marker.
type PlannedStop struct {
	TargetPID       int    `json:"target_pid"`
	TargetStartTime *int64 `json:"target_start_time"`
	StopperPID      int    `json:"stopper_pid"`
	WrittenAt       string `json:"written_at"`
	// As _read_live_pid_marker reads it: empty is `{}` (Hermes neither
	// uses nor removes it); targetOK and targetRaises are
	// _pid_from_record's answer on target_pid.
	empty, targetOK, targetRaises bool
}

// WritePlannedStop atomically writes the marker for target, stopped by
// stopperPID, stamped with now.
func WritePlannedStop(l Layout, target procstate.Identity, stopperPID int, now time.Time) error {
	b, err := plannedStopJSON(target, stopperPID, now)
	if err != nil {
		return err
	}
	return WriteFileAtomic(l.PlannedStopMarker(), b, 0o644)
}

// WritePlannedStopFor is WritePlannedStop into the home of the user uid,
// whose gateway is stopped: a process that acts for them (root under
// sudo, see safefs.ActsFor) writes it only where uid could have, never
// following a link they could swap.
func WritePlannedStopFor(l Layout, target procstate.Identity, stopperPID int, now time.Time, uid int) error {
	if !safefs.ActsFor(uid) {
		return WritePlannedStop(l, target, stopperPID, now)
	}
	b, err := plannedStopJSON(target, stopperPID, now)
	if err != nil {
		return err
	}
	dir, name := filepath.Split(l.PlannedStopMarker())
	return safefs.WriteFileFor(dir, name, b, 0o644, uid)
}

func plannedStopJSON(target procstate.Identity, stopperPID int, now time.Time) ([]byte, error) {
	return json.Marshal(PlannedStop{
		TargetPID:       target.PID,
		TargetStartTime: target.StartTime,
		StopperPID:      stopperPID,
		WrittenAt:       now.UTC().Format(markerTime),
	})
}

// ReadPlannedStop reads and parses a planned-stop marker.
func ReadPlannedStop(path string) (PlannedStop, error) {
	b, err := readBounded(path)
	if err != nil {
		return PlannedStop{}, &FileError{Path: path, Op: "read", Err: err, Hint: readHint(err)}
	}
	m, err := parsePlannedStop(b)
	if err != nil {
		return m, &FileError{Path: path, Err: err}
	}
	return m, nil
}

// Fresh reports whether the marker still counts at now, by Hermes'
// _marker_is_stale (markerStale): written at most MarkerTTL ago, or dated
// in the future.
func (m PlannedStop) Fresh(now time.Time) bool { return !markerStale(m.WrittenAt, now) }

// State is gateway_state.json: the pid record plus the gateway's state.
type State struct {
	Record
	GatewayState string  `json:"gateway_state"`
	ExitReason   *string `json:"exit_reason"`
}

// ReadState reads gateway_state.json.
func ReadState(path string) (State, error) {
	b, err := readBounded(path)
	if err != nil {
		return State{}, &FileError{Path: path, Op: "read", Err: err, Hint: readHint(err)}
	}
	st, err := parseState(b)
	if err != nil {
		return st, &FileError{Path: path, Err: err}
	}
	return st, nil
}

// UpdateState read-merges gateway_state.json, as Hermes' write_runtime_status
// does: fn changes the decoded object, which is written back atomically.
// Unlike Hermes' atomic_json_write it does not fsync: what a power loss
// could undo is a dead gateway's "running", which names a pid of another
// boot then, stale by every rule; the sweep before a restart marks the
// dead gateway stopped, and two fsyncs there cost milliseconds.
func UpdateState(l Layout, now time.Time, fn func(m map[string]any)) error {
	path := l.StateFile()
	m := map[string]any{}
	b, err := readBounded(path)
	switch {
	case err == nil:
		if json.Unmarshal(b, &m) != nil || m == nil {
			m = map[string]any{} // a torn file is replaced, as Hermes does
		}
	case !errors.Is(err, os.ErrNotExist):
		return &FileError{Path: path, Op: "read", Err: err, Hint: readHint(err)}
	}
	fn(m)
	m["updated_at"] = now.UTC().Format(markerTime)
	out, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return replaceFile(path, out, 0o644, false)
}
