package lockstore

import (
	"encoding/json"
	"testing"
)

// FuzzParseRecord holds the parser to its contract: it never panics, and
// whatever it accepts names a real pid and survives a round trip.
func FuzzParseRecord(f *testing.F) {
	for _, seed := range []string{
		`{"pid": 4242, "kind": "hermes-gateway", "argv": ["/usr/local/bin/hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes"}`,
		`{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes", "scope": "telegram-bot-token", "identity_hash": "0123456789abcdef", "metadata": {}, "updated_at": "2026-09-01T10:00:00.123456+00:00", "profile": "default"}`,
		"4242\n", "\xef\xbb\xbf4242", "", "   ", `{"pid": 12`, `{"pid": "12"}`, `{"pid": 1.5}`, `{"pid": -3}`,
		`{"pid": 7, "argv": "hermes"}`, `{"pid": 7, "start_time": null}`, `[1,2]`, `{"pid": 99999999999}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecord(data)
		if err != nil {
			return
		}
		if r.PID <= 0 {
			t.Fatalf("accepted pid %d from %q", r.PID, data)
		}
		if r.Legacy {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRecord(b)
		if err != nil || again.PID != r.PID {
			t.Fatalf("round trip of %q: %+v, %v", data, again, err)
		}
	})
}
