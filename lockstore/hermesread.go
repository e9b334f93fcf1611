package lockstore

// The one reader of Hermes' records (pid file, gateway.lock, scoped locks,
// gateway_state.json, markers), as gateway/status.py's _read_json_file and
// _pid_from_record read them. Like hermesrules.go it does no I/O: it is
// given the bytes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// readJSONFile mirrors _read_json_file: the JSON object in data, after a
// UTF-8 BOM and surrounding whitespace; where barePID allows it (pid and
// lock files), a legacy bare integer, read as {"pid": N}. Anything else
// is an error: ErrEmpty for an empty file, *CorruptError otherwise.
// legacy reports the bare integer.
func readJSONFile(data []byte, barePID bool) (fields map[string]json.RawMessage, legacy bool, err error) {
	if len(data) > MaxRecordSize {
		return nil, false, &CorruptError{Reason: fmt.Sprintf("more than %d bytes, larger than any record", MaxRecordSize)}
	}
	data = bytes.TrimSpace(bytes.TrimPrefix(data, bom))
	if len(data) == 0 {
		return nil, false, ErrEmpty
	}
	if !utf8.Valid(data) {
		return nil, false, &CorruptError{Reason: "not UTF-8 text"}
	}
	if err := json.Unmarshal(data, &fields); err == nil && fields != nil {
		return fields, false, nil
	} else if n, ok := pythonInt(string(data)); ok && data[0] != '{' {
		if !barePID {
			return nil, false, &CorruptError{Reason: "a bare pid, which Hermes reads as no record here"}
		}
		return map[string]json.RawMessage{"pid": json.RawMessage(strconv.Itoa(n))}, true, nil
	} else if err == nil {
		return nil, false, &CorruptError{Reason: "not a JSON object: " + quoteStart(data)}
	} else if data[0] != '{' {
		return nil, false, &CorruptError{Reason: "neither JSON nor a bare pid: " + quoteStart(data)}
	} else {
		return nil, false, &CorruptError{Reason: "not JSON: " + describeJSONError(err)}
	}
}

// pidFromRecord mirrors _pid_from_record, int(record[key]): an integer, a
// float (truncated) or a numeric string is a pid; null, a list or a word
// is not. A pid that cannot be a process id is no pid either.
func pidFromRecord(fields map[string]json.RawMessage, key string) (int, bool) {
	raw, ok := fields[key]
	if !ok {
		return 0, false
	}
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

// startTimeOf reads a recorded start time: nil for null or absent; bogus
// when it is there but no whole number, so that it never equals a live
// start time.
func startTimeOf(raw json.RawMessage) (start *int64, bogus bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<62 {
		return nil, true
	}
	v := int64(f)
	return &v, false
}

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
	// gatewayState and exitReason are gateway_state.json's own fields.
	gatewayState string
	exitReason   *string
	// writer is the uid owning the file, set only for files the writer
	// creates afresh (pid file, scoped locks): see procstate.OwnerConflict.
	writer *uint32
}

// parseHermesRecord reads a pid, lock or state record as Hermes does
// (readJSONFile, then the fields its rules read).
func parseHermesRecord(data []byte, barePID bool) (hermesRecord, error) {
	fields, legacy, err := readJSONFile(data, barePID)
	if err != nil {
		return hermesRecord{}, err
	}
	var h hermesRecord
	h.Legacy = legacy
	h.PID, h.pidOK = pidFromRecord(fields, "pid")
	h.StartTime, h.startBogus = startTimeOf(fields["start_time"])
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
	h.UpdatedAt, h.Profile, h.gatewayState = str("updated_at"), str("profile"), str("gateway_state")
	if raw, ok := fields["metadata"]; ok && string(raw) != "null" {
		h.Metadata = raw
	}
	var reason string
	if json.Unmarshal(fields["exit_reason"], &reason) == nil && string(fields["exit_reason"]) != "null" {
		h.exitReason = &reason
	}
	return h, nil
}

// parseState reads gateway_state.json with the one reader.
func parseState(b []byte) (State, error) {
	h, err := parseHermesRecord(b, false)
	if err != nil {
		return State{}, err
	}
	return State{Record: h.Record, GatewayState: h.gatewayState, ExitReason: h.exitReason}, nil
}

// parsePlannedStop reads a planned-stop marker with the one reader, as
// _read_live_pid_marker does: target_pid by _pid_from_record.
func parsePlannedStop(b []byte) (PlannedStop, error) {
	fields, _, err := readJSONFile(b, false)
	if err != nil {
		return PlannedStop{}, err
	}
	var m PlannedStop
	m.TargetPID, _ = pidFromRecord(fields, "target_pid")
	m.TargetStartTime, _ = startTimeOf(fields["target_start_time"])
	m.StopperPID, _ = pidFromRecord(fields, "stopper_pid")
	_ = json.Unmarshal(fields["written_at"], &m.WrittenAt)
	return m, nil
}

// mayBeMidWrite reports whether an unreadable record could be one a writer
// is still filling: empty (between the O_EXCL create and the write), or
// JSON cut short.
func mayBeMidWrite(data []byte) bool {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, bom))
	return len(data) == 0 || (data[0] == '{' && !json.Valid(data))
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Field is a dotted path through embedded structs; the JSON key is
		// its last element.
		field := te.Field[strings.LastIndexByte(te.Field, '.')+1:]
		return fmt.Sprintf("%q holds a %s", field, te.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected end of JSON input") {
		return "truncated"
	}
	return err.Error()
}

func quoteStart(b []byte) string {
	if len(b) > 24 {
		return strconv.Quote(string(b[:24])) + "..."
	}
	return strconv.Quote(string(b))
}
