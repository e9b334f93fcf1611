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

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// readJSONFile mirrors _read_json_file: read_text("utf-8-sig") (one
// leading BOM dropped), str.strip(), then json.loads; where barePID
// allows it (pid and lock files), a JSON integer, or a text int() takes,
// is a legacy bare pid, read as {"pid": N}. Anything else is an error:
// ErrEmpty for an empty file, *CorruptError otherwise. legacy reports the
// bare pid.
func readJSONFile(data []byte, barePID bool) (fields members, legacy bool, err error) {
	return readJSONFileTo(nil, data, barePID)
}

// readJSONFileTo is readJSONFile appending the members to fields (see
// appendMembers).
func readJSONFileTo(fields members, data []byte, barePID bool) (_ members, legacy bool, err error) {
	if len(data) > maxReadable {
		return nil, false, &CorruptError{Reason: fmt.Sprintf("more than %d bytes, larger than any record a command line allows", maxReadable), tooLarge: true}
	}
	data = bytes.TrimPrefix(data, bom)
	if !utf8.Valid(data) {
		return nil, false, &CorruptError{Reason: "not UTF-8 text"}
	}
	// Stripped in place: the members cut below are slices of data, not
	// of a copy made for the strip and another for the cut.
	raw := bytes.TrimFunc(data, pyparse.IsSpace)
	if len(raw) == 0 {
		return nil, false, ErrEmpty
	}
	if mayNest(raw) {
		if d := nesting(raw); d > maxNesting {
			return nil, false, &CorruptError{Reason: fmt.Sprintf("JSON nested %d deep, on which Python's json.loads raises RecursionError (Hermes' reader does not catch it)", d), hermesRaises: true}
		}
	}
	if longInteger(raw) {
		return nil, false, &CorruptError{Reason: fmt.Sprintf("a JSON integer of more than %d digits, on which Python's json.loads raises ValueError under the lowest limit PYTHONINTMAXSTRDIGITS sets (Hermes' reader does not catch it)", maxIntDigits), hermesRaises: true}
	}
	if cut, ok := appendMembers(fields, raw); ok {
		return cut, false, nil
	}
	var escaped map[string]json.RawMessage
	if err := json.Unmarshal(raw, &escaped); err == nil && escaped != nil {
		for k, v := range escaped {
			fields = append(fields, member{k, v})
		}
		return fields, false, nil
	}
	text := string(raw)
	var value json.RawMessage
	jerr := json.Unmarshal(raw, &value)
	if jerr == nil {
		// json.loads gives an int (True and False are ints too) only for
		// an integer literal; a float, string, list or null is no pid.
		if barePID && (text == "true" || text == "false" || isIntLiteral(text)) {
			return members{{"pid", value}}, true, nil
		}
		return nil, false, &CorruptError{Reason: "not a JSON object: " + quoteStart(raw)}
	}
	if n, ok := pyparse.Int(text); ok {
		if !barePID {
			return nil, false, &CorruptError{Reason: "a bare pid, which Hermes reads as no record here"}
		}
		return members{{"pid", json.RawMessage(strconv.FormatInt(n, 10))}}, true, nil
	}
	if strings.Contains(text, "NaN") || strings.Contains(text, "Infinity") {
		// Python's json.loads reads NaN and Infinity, and int() of an
		// infinite pid raises, so Hermes may keep this file.
		return nil, false, &CorruptError{Reason: "JSON with NaN or Infinity, which Python reads and Go does not", pythonOnly: true}
	}
	if text[0] != '{' {
		return nil, false, &CorruptError{Reason: "neither JSON nor a bare pid: " + quoteStart(raw)}
	}
	return nil, false, &CorruptError{Reason: "not JSON: " + describeJSONError(jerr)}
}

// maxNesting is the deepest a record may nest (the record itself counts
// one) and still be judged. Hermes writes records nested three deep at
// most (gateway_state.json's platforms); Python's json.loads raises
// RecursionError once its recursion limit is reached, which counts the
// caller's own frames: from nesting 996 on 3.11 when called at the top
// (its default limit is 1000), less when called deep in a stack, and
// elsewhere on other versions (3.12 and later bound the C stack instead).
// No Python raises at 100 short of a caller nearly 900 frames deep, and
// no record Hermes writes comes near it: anything deeper may be one on
// which Hermes' reader raises and removes nothing, so it is kept
// unjudged, never swept nor quarantined.
const maxNesting = 100

// mayNest reports whether text holds more than maxNesting brackets that
// open, anywhere: fewer cannot nest that deep, and counting them is a
// tenth of nesting's walk, which every record read would otherwise take.
func mayNest(text []byte) bool {
	return bytes.Count(text, []byte{'{'})+bytes.Count(text, []byte{'['}) > maxNesting
}

// nesting returns how deep the objects and arrays of text nest, counting
// brackets outside strings, as far as the text goes. Where text is no
// valid JSON it may count deeper than Python descends before its error,
// which only keeps more.
func nesting(text []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// isIntLiteral reports whether a valid JSON number is an integer literal
// (no fraction or exponent), which json.loads reads as a Python int.
func isIntLiteral(num string) bool {
	return num != "" && (num[0] == '-' || (num[0] >= '0' && num[0] <= '9')) && !strings.ContainsAny(num, ".eE")
}

// pidValue is what _pid_from_record's int(record[key]) gives.
type pidValue int

const (
	pidNone   pidValue = iota // KeyError, TypeError or ValueError: None
	pidOK                     // an int, then judged whatever it is (0 too)
	pidRaises                 // OverflowError (an infinite float): Hermes raises
)

// pidFromRecord mirrors _pid_from_record, int(record[key]): an integer, a
// bool (True is 1), a float (truncated) or a string int() takes is a pid,
// then judged as any is, 0 and negatives too; null, a list, an object or
// a word is None. A value no process id can have becomes -1, which no
// process has either.
func pidFromRecord(fields members, key string) (int, pidValue) {
	raw, ok := fields.get(key)
	if !ok {
		return 0, pidNone
	}
	var n int64
	switch t := strings.TrimSpace(string(raw)); {
	case t == "true":
		n = 1
	case t == "false":
		n = 0
	case t == "" || t == "null" || t[0] == '[' || t[0] == '{':
		return 0, pidNone
	case t[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, pidNone
		}
		if n, ok = pyparse.Int(s); !ok {
			return 0, pidNone
		}
	case isIntLiteral(t):
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return -1, pidOK // beyond int64: no process
		}
		n = v
	default:
		f, err := strconv.ParseFloat(t, 64)
		if math.IsInf(f, 0) {
			return 0, pidRaises
		}
		if err != nil || math.IsNaN(f) {
			return 0, pidNone
		}
		if math.Abs(f) >= 1<<62 {
			return -1, pidOK
		}
		n = int64(f) // int() truncates toward zero
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return -1, pidOK
	}
	return int(n), pidOK
}

// startTimeOf reads a recorded start time: nil for null or absent; bogus
// when it is there but no whole number, so that it never equals a live
// start time.
func startTimeOf(raw json.RawMessage) (start *int64, bogus bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	if t := string(raw); len(t) <= 15 && isIntLiteral(t) {
		// Exact as an int64 and as a float64 alike: what the float
		// reading below gives, without its reflection.
		if v, err := strconv.ParseInt(t, 10, 64); err == nil {
			return &v, false
		}
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
	// pidOK: Hermes' _pid_from_record got a pid (int() of the value);
	// pidRaises: int() raised instead (an infinite float).
	pidOK, pidRaises bool
	// homeRaises: hermes_home is truthy but no string (or holds a NUL), so
	// Hermes' _same_hermes_home raises instead of deciding.
	homeRaises bool
	// homeSurrogate: hermes_home holds an escaped lone surrogate, which
	// Go's JSON reads as U+FFFD (see loneSurrogate).
	homeSurrogate bool
	// stateNone: gateway_state is absent, null, "stopped" or
	// "startup_failed", which get_runtime_status_running_pid ignores;
	// stateRaises: it is a list or object, which its `in` test raises on.
	stateNone, stateRaises bool
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
	// The members and argv's items are read into arrays of this frame:
	// nothing of them outlives the reading but the strings taken out.
	var memberBuf [16]member
	var itemBuf [8]json.RawMessage
	fields, legacy, err := readJSONFileTo(memberBuf[:0], data, barePID)
	if err != nil {
		return hermesRecord{}, err
	}
	var h hermesRecord
	h.Legacy = legacy
	var pv pidValue
	h.PID, pv = pidFromRecord(fields, "pid")
	h.pidOK, h.pidRaises = pv == pidOK, pv == pidRaises
	h.homeRaises = homeRaises(fields.at("hermes_home"))
	h.homeSurrogate = loneSurrogate(fields.at("hermes_home"))
	h.stateNone, h.stateRaises = stateIgnored(fields.at("gateway_state"))
	h.StartTime, h.startBogus = startTimeOf(fields.at("start_time"))
	argv := fields.at("argv")
	// Anything but an array has no items, as json.Unmarshal finds (the
	// differential tests hold appendItems to it).
	list, _ := appendItems(itemBuf[:0], argv)
	if len(list) > 0 {
		h.argvList = true
		parts := make([]string, len(list))
		for i, p := range list {
			s, ok := stringOf(p)
			if !ok {
				s = string(p) // close enough to Python's str() of a number
			}
			parts[i] = s
		}
		h.Argv, h.argvLine = parts, strings.Join(parts, " ")
	}
	str := func(k string) string {
		s, _ := stringOf(fields.at(k))
		return s
	}
	h.Kind, h.HermesHome, h.Scope, h.IdentityHash = str("kind"), str("hermes_home"), str("scope"), str("identity_hash")
	h.UpdatedAt, h.Profile, h.gatewayState = str("updated_at"), str("profile"), str("gateway_state")
	if raw, ok := fields.get("metadata"); ok && string(raw) != "null" {
		// A copy: the members are slices of data, which is the caller's.
		h.Metadata = bytes.Clone(raw)
	}
	if reason, ok := stringOf(fields.at("exit_reason")); ok && string(fields.at("exit_reason")) != "null" {
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
	var pv pidValue
	m.TargetPID, pv = pidFromRecord(fields, "target_pid")
	m.targetOK, m.targetRaises = pv == pidOK, pv == pidRaises
	m.empty = len(fields) == 0
	m.TargetStartTime, _ = startTimeOf(fields.at("target_start_time"))
	m.StopperPID, _ = pidFromRecord(fields, "stopper_pid")
	_ = json.Unmarshal(fields.at("written_at"), &m.WrittenAt)
	return m, nil
}

// homeRaises reports whether Hermes' `not record_home or
// _same_hermes_home(record_home, ...)` raises on raw: a truthy value that
// is no string (Path() of it is a TypeError), or a string with a NUL
// (resolve() raises ValueError).
func homeRaises(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null" || string(t) == "false" || string(t) == "[]" || string(t) == "{}" || string(t) == `""`:
		return false
	case t[0] == '"':
		// JSON has no raw control character in a string: only an escape
		// can make a NUL.
		if bytes.IndexByte(t, '\\') < 0 {
			return false
		}
		s, ok := unquote(raw)
		return !ok || strings.ContainsRune(s, 0)
	case t[0] == '[' || t[0] == '{' || string(t) == "true":
		return !emptyContainer(raw)
	}
	f, err := strconv.ParseFloat(string(t), 64)
	return err != nil || f != 0
}

// loneSurrogate reports whether raw, a JSON string, escapes a surrogate
// that is not one of a pair. Python's json.loads keeps it in the str, and
// Hermes writes one for each home path byte that is not UTF-8 (\udc80 to
// \udcff, surrogateescape): as a path it is that byte again to Python, or
// a UnicodeEncodeError (other surrogates); Go's JSON makes it U+FFFD.
func loneSurrogate(raw json.RawMessage) bool {
	if len(raw) == 0 || raw[0] != '"' || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	// escaped returns the code unit of a \uXXXX escape at raw[i:].
	escaped := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 1; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escaped(i)
		if !ok {
			i++ // a two-character escape
			continue
		}
		i += 5
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true // a low surrogate with no high one before it
		case r >= 0xd800 && r <= 0xdbff:
			if low, ok := escaped(i + 1); !ok || low < 0xdc00 || low > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

func emptyContainer(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// stateIgnored mirrors get_runtime_status_running_pid's
// `gateway_state in {None, "stopped", "startup_failed"}`: ignored is
// true for those; raises for a list or object, which cannot be hashed.
func stateIgnored(raw json.RawMessage) (ignored, raises bool) {
	t := strings.TrimSpace(string(raw))
	switch {
	case t == "" || t == "null":
		return true, false
	case t[0] == '[' || t[0] == '{':
		return false, true
	case t[0] == '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s == "stopped" || s == "startup_failed", false
	}
	return false, false
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
