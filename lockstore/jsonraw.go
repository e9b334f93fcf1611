package lockstore

// The record reader's fast paths (hermesread.go): values cut out of a
// document json.Valid has accepted, and strings taken from them, as
// json.Unmarshal would give them but without its reflection, which was
// most of the cost of judging a lock file. The differential tests in
// hermesread_test.go (run by FuzzParseRecord) hold each to Unmarshal.

import (
	"bytes"
	"encoding/json"
)

// members are a JSON object's members as json.Unmarshal into a
// map[string]json.RawMessage gives them, kept in a slice: a record has a
// dozen, and the map was a quarter of the cost of reading one.
type members []member

type member struct {
	name string
	raw  json.RawMessage
}

// get is the map's lookup: the last of two equal names wins, as in
// Unmarshal.
func (m members) get(name string) (json.RawMessage, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].name == name {
			return m[i].raw, true
		}
	}
	return nil, false
}

// at is get without ok: nil for a member that is not there.
func (m members) at(name string) json.RawMessage {
	raw, _ := m.get(name)
	return raw
}

// objectMembers is json.Unmarshal of text into raw members,
// where text is a valid JSON object: ok is false for anything else, and
// for a key with an escape, which the caller leaves to Unmarshal. After
// json.Valid the members are cut out by their brackets and quotes alone;
// decoding through reflection was half the cost of judging a lock file.
// As Unmarshal, the last of two equal keys wins.
func objectMembers(text []byte) (members, bool) { return appendMembers(nil, text) }

// appendMembers is objectMembers appending to fields: a caller that keeps
// the members no longer than the record's reading passes an array of its
// own, and judging a lock file allocates none for them: this slice was a
// sixth of what judging one allocated, and the garbage collector 15–30%
// of a big sweep's time.
func appendMembers(fields members, text []byte) (members, bool) {
	i := nextNonSpace(text, 0)
	if i == len(text) || text[i] != '{' || !json.Valid(text) {
		return nil, false
	}
	if fields == nil {
		fields = make(members, 0, 12) // a scoped lock's 10 members without growing
	}
	for i = nextNonSpace(text, i+1); text[i] != '}'; i = nextNonSpace(text, i+1) {
		end := valueEnd(text, i) // the key, a string
		key := text[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = nextNonSpace(text, nextNonSpace(text, end)+1) // past the colon
		end = valueEnd(text, i)
		fields = append(fields, member{keyName(key), text[i:end:end]})
		if i = nextNonSpace(text, end); text[i] == '}' {
			break
		}
	}
	return fields, true
}

// keyName is string(key), without a copy for the names Hermes writes:
// a copy per member was a fifth of what reading a record allocated.
func keyName(key []byte) string {
	switch string(key) {
	case "pid":
		return "pid"
	case "kind":
		return "kind"
	case "argv":
		return "argv"
	case "start_time":
		return "start_time"
	case "hermes_home":
		return "hermes_home"
	case "scope":
		return "scope"
	case "identity_hash":
		return "identity_hash"
	case "metadata":
		return "metadata"
	case "updated_at":
		return "updated_at"
	case "profile":
		return "profile"
	case "gateway_state":
		return "gateway_state"
	case "exit_reason":
		return "exit_reason"
	}
	return string(key)
}

// arrayItems is json.Unmarshal of raw, a valid JSON value, into a slice
// of raw items: ok is false when raw is not an array, where Unmarshal
// finds no items either (null) or fails.
func arrayItems(raw json.RawMessage) ([]json.RawMessage, bool) { return appendItems(nil, raw) }

// appendItems is arrayItems appending to items, as appendMembers.
func appendItems(items []json.RawMessage, raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	if items == nil {
		items = make([]json.RawMessage, 0, 8) // a gateway's argv without growing
	}
	for i := nextNonSpace(raw, 1); raw[i] != ']'; i = nextNonSpace(raw, i+1) {
		end := valueEnd(raw, i)
		items = append(items, raw[i:end:end])
		if i = nextNonSpace(raw, end); raw[i] == ']' {
			break
		}
	}
	return items, true
}

// nextNonSpace returns the index of the first byte at or after i in b
// that is not JSON white space.
func nextNonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value that starts at b[i], in a
// document json.Valid accepts: a string ends at its closing quote, an
// object or array at its closing bracket, a number or literal at the
// first byte that cannot be in one.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a number or literal
			}
			if depth--; depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i
			}
		}
	}
	return i
}

// stringOf is json.Unmarshal of raw, a value of a document already
// validated as JSON and as UTF-8, into a string. A string with no escape
// is taken as it stands, without the reflection and second validation
// that made decoding most of judging a lock file; ok is false where
// Unmarshal fails.
func stringOf(raw json.RawMessage) (string, bool) {
	n := len(raw)
	switch {
	case n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0:
		return string(raw[1 : n-1]), true
	case string(raw) == "null":
		return "", true // Unmarshal leaves the string as it was
	case n == 0 || raw[0] != '"':
		return "", false // no string: Unmarshal's error, without making it
	}
	return unquote(raw)
}

// unquote is json.Unmarshal of raw into a string.
func unquote(raw json.RawMessage) (s string, ok bool) {
	return s, json.Unmarshal(raw, &s) == nil
}
