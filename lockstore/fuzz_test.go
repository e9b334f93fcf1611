package lockstore

import (
	"encoding/json"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
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
		// Hermes' reading of the same bytes, and its classifier on them,
		// must never panic, and a pid they accept (0 and negatives are
		// pids Hermes then judges) fits a process id's range.
		for _, bare := range []bool{true, false} {
			if h, err := parseHermesRecord(data, bare); err == nil && h.pidOK && (h.PID < math.MinInt32 || h.PID > math.MaxInt32) {
				t.Fatalf("Hermes reading accepted pid %d from %q", h.PID, data)
			}
		}
		fastPathsAsUnmarshal(t, data)
		// The shortcuts never skip a record the full walks would refuse.
		if d := nesting(data); d > maxNesting && !mayNest(data) {
			t.Fatalf("nested %d deep, and mayNest says no: %q", d, data)
		}
		GatewaySubcommand(string(data))
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

// FuzzParseState holds gateway_state.json's parser to never panicking, and
// to reading back what it would write.
func FuzzParseState(f *testing.F) {
	for _, seed := range []string{
		`{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234, "gateway_state": "running", "exit_reason": null, "platforms": {"telegram": {"state": "connected"}}}`,
		`{"gateway_state": "stopped", "exit_reason": "signal"}`, `{}`, `null`, ``, `{"pid": "x"}`, `{"gateway_state": 3}`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseState(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseState(b)
		if err != nil || again.GatewayState != s.GatewayState || again.PID != s.PID {
			t.Fatalf("round trip of %q: %+v, %v", data, again, err)
		}
	})
}

// FuzzParseMarker holds the planned-stop marker's parser, and the check of
// its age, to never panicking on anything a crashed writer leaves.
func FuzzParseMarker(f *testing.F) {
	for _, seed := range []string{
		`{"target_pid": 4242, "target_start_time": 881234, "stopper_pid": 777, "written_at": "2026-09-01T10:00:00+00:00"}`,
		`{"target_pid": 4242, "target_start_time": null, "stopper_pid": 777, "written_at": "2026-09-01T10:00:00Z"}`,
		`{"written_at": "yesterday"}`, `{"target_pid": -1}`, ``, `{"target_pid": 1e99}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 9, 1, 10, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parsePlannedStop(data)
		if err != nil {
			return
		}
		fresh := m.Fresh(now)
		// Hermes reads written_at with datetime.fromisoformat, which takes
		// more than RFC 3339 (any separator character: "2027-01-01000Z" is
		// midnight); pyparse mirrors it, pinned to Python's own answers by
		// its table tests.
		when, aware, err := pyparse.FromISOFormat(m.WrittenAt)
		switch {
		case (err != nil || !aware) && fresh:
			t.Fatalf("a time Python cannot read, or without a zone, %q counted as fresh", m.WrittenAt)
		case err == nil && fresh && now.Sub(when) > MarkerTTL:
			t.Fatalf("marker written at %v counted as fresh at %v", when, now)
		}
	})
}

// tokenLockPattern is the shape of a scoped lock's name as a regular
// expression: isTokenLock, matched by hand, must agree with it.
var tokenLockPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+-[0-9a-f]{16}\.lock$`)

// FuzzIsTokenLock holds isTokenLock to the regular expression it replaced.
func FuzzIsTokenLock(f *testing.F) {
	for _, n := range []string{
		"telegram-bot-token-0123456789abcdef.lock",
		"a-0123456789abcdef.lock",
		"-0123456789abcdef.lock",
		"--0123456789abcdef.lock",
		"a-0123456789ABCDEF.lock",
		"a-0123456789abcde.lock",
		"a-0123456789abcdeg.lock",
		"a-g123456789abcdef.lock",
		"a-0123456789abcdef0.lock",
		"a_0123456789abcdef.lock",
		"a b-0123456789abcdef.lock",
		"a/b-0123456789abcdef.lock",
		"a-0123456789abcdef.lock.stale",
		"a-0123456789abcdef.Lock",
		"x.lock",
		"host-gateway.lock",
		"é-0123456789abcdef.lock",
		"",
	} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if got, want := isTokenLock(n), tokenLockPattern.MatchString(n); got != want {
			t.Fatalf("isTokenLock(%q) = %v, the pattern says %v", n, got, want)
		}
	})
}

// FuzzRecordJSON holds Record.Encode to encoding/json's spelling of
// the same struct, byte for byte, errors included: every field, empty and
// not, strings with escapes, HTML characters, U+2028, bytes that are not
// UTF-8, and metadata that is not compact or not JSON at all.
func FuzzRecordJSON(f *testing.F) {
	type seed struct {
		pid                          int
		kind, argv0, argv1           string
		nargs                        int
		start                        int64
		hasStart                     bool
		home, scope, hash, upd, prof string
		meta                         []byte
	}
	for _, s := range []seed{
		{pid: 1234, kind: GatewayKind, argv0: "/usr/bin/python3", argv1: "gateway", nargs: 2, start: 987654, hasStart: true, home: "/root/.hermes"},
		{},
		{pid: -1, nargs: 1, start: math.MinInt64, hasStart: true},
		{pid: math.MaxInt32, argv0: "a\"b\\c\n\r\t\b\f\x00\x1f\x7f", nargs: 1, home: "<script>&amp;</script>"},
		{argv0: "\u2028\u2029é\U0001F600", argv1: "\xff\xfe\xc3", nargs: 2, scope: "telegram-bot-token", hash: "0123456789abcdef"},
		{upd: "2026-11-25T12:00:00.000000+00:00", prof: "work", meta: []byte(` { "a" : [1, 2, "<x>"] } `)},
		{meta: []byte(`{"a":`)},
		{meta: []byte(`"\u2028"`), nargs: 1},
		{meta: []byte(" ")},
		{pid: 7, nargs: 3}, // an empty argv, not a missing one: omitted all the same
	} {
		f.Add(s.pid, s.kind, s.argv0, s.argv1, s.nargs, s.start, s.hasStart, s.home, s.scope, s.hash, s.upd, s.prof, s.meta)
	}
	f.Fuzz(func(t *testing.T, pid int, kind, argv0, argv1 string, nargs int, start int64, hasStart bool, home, scope, hash, upd, prof string, meta []byte) {
		r := Record{PID: pid, Kind: kind, HermesHome: home, Scope: scope, IdentityHash: hash, UpdatedAt: upd, Profile: prof, Metadata: meta, Legacy: hasStart}
		switch nargs & 3 {
		case 1:
			r.Argv = []string{argv0}
		case 2:
			r.Argv = []string{argv0, argv1}
		case 3:
			r.Argv = []string{}
		}
		if hasStart {
			r.StartTime = &start
		}
		want, werr := json.Marshal(r)
		got, gerr := r.Encode()
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Encode error %v, encoding/json's %v, for %#v", gerr, werr, r)
		}
		if werr == nil && string(got) != string(want) {
			t.Fatalf("Encode wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	})
}
