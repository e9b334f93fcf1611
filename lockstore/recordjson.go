package lockstore

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Encode spells r as json.Marshal does, byte for byte (FuzzRecordJSON
// holds it to that). It is written out because a process's first
// json.Marshal of a Record builds the encoder by reflection, about 0.1 ms
// here, and a gateway writes its first record on the way to gateway.pid,
// on every restart's critical path. It is not MarshalJSON: State embeds
// Record, and would marshal as the record alone.
func (r Record) Encode() ([]byte, error) {
	b := make([]byte, 0, 128+len(r.HermesHome)+16*len(r.Argv))
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(r.PID), 10)
	b = appendField(b, "kind", r.Kind)
	if len(r.Argv) > 0 {
		b = append(b, `,"argv":[`...)
		for i, a := range r.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"start_time":`...)
	if r.StartTime == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *r.StartTime, 10)
	}
	b = appendField(b, "hermes_home", r.HermesHome)
	b = appendField(b, "scope", r.Scope)
	b = appendField(b, "identity_hash", r.IdentityHash)
	if len(r.Metadata) > 0 {
		// As encoding/json writes a RawMessage: compacted, and HTML-escaped
		// like every string it writes; an invalid one is an error.
		var c bytes.Buffer
		if err := json.Compact(&c, r.Metadata); err != nil {
			return nil, err
		}
		var h bytes.Buffer
		json.HTMLEscape(&h, c.Bytes())
		b = append(b, `,"metadata":`...)
		b = append(b, h.Bytes()...)
	}
	b = appendField(b, "updated_at", r.UpdatedAt)
	b = appendField(b, "profile", r.Profile)
	return append(b, '}'), nil
}

// appendField appends `,"name":"v"`, or nothing for an empty v (omitempty).
func appendField(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

// appendJSONString quotes s as encoding/json does with HTML escaping on:
// <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and
// each byte that is not UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
