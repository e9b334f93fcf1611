package lockstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestParseRecord: ParseRecord is the one reader (readJSONFile and
// _pid_from_record, as Hermes reads), refusing only what names no pid or
// a start time no caller could compare.
func TestParseRecord(t *testing.T) {
	full := `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes", "scope": "telegram-bot-token", "identity_hash": "0123456789abcdef", "metadata": {}, "updated_at": "2026-09-01T10:00:00.123456+00:00", "profile": "default"}`
	tests := []struct {
		name    string
		in      string
		pid     int
		start   int64 // -1: null
		legacy  bool
		empty   bool
		corrupt string // substring of the reason
	}{
		{name: "scoped lock record", in: full, pid: 4242, start: 881234},
		{name: "pid file record", in: `{"pid": 4242, "kind": "hermes-gateway", "argv": ["/usr/local/bin/hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes"}`, pid: 4242, start: 881234},
		{name: "null start time", in: `{"pid": 7, "start_time": null}`, pid: 7, start: -1},
		{name: "legacy bare integer", in: "4242\n", pid: 4242, start: -1, legacy: true},
		{name: "BOM and whitespace", in: "\xef\xbb\xbf  {\"pid\": 9}\r\n", pid: 9, start: -1},
		{name: "BOM legacy", in: "\xef\xbb\xbf31", pid: 31, start: -1, legacy: true},
		{name: "empty", in: "", empty: true},
		{name: "whitespace only", in: " \n\t", empty: true},
		{name: "truncated", in: `{"pid": 4242, "kind": "hermes-ga`, corrupt: "truncated"},
		{name: "not JSON", in: "hello world", corrupt: "neither JSON nor a bare pid"},
		{name: "binary garbage", in: "\x00\x01\xff\xfe", corrupt: "not UTF-8"},
		{name: "JSON array", in: `[4242]`, corrupt: "not a JSON object"},
		{name: "pid as string", in: `{"pid": "4242"}`, pid: 4242, start: -1}, // int("4242")
		{name: "pid as float", in: `{"pid": 42.5}`, pid: 42, start: -1},      // int(42.5)
		{name: "pid zero", in: `{"pid": 0}`, corrupt: `no usable "pid"`},
		{name: "pid negative", in: `{"pid": -1}`, corrupt: `no usable "pid"`},
		{name: "legacy negative", in: `-5`, corrupt: `no usable "pid"`}, // Hermes judges pid -5; we act on none
		{name: "pid too large", in: `{"pid": 99999999999}`, corrupt: `no usable "pid"`},
		{name: "no pid", in: `{"kind": "hermes-gateway"}`, corrupt: `no usable "pid"`},
		{name: "argv wrong type", in: `{"pid": 3, "argv": "hermes gateway run"}`, pid: 3, start: -1}, // no argv list: as if absent
		{name: "start time wrong type", in: `{"pid": 3, "start_time": "soon"}`, corrupt: `"start_time" is not a whole number`},
		{name: "huge", in: `{"pid": 3, "x": "` + strings.Repeat("a", MaxRecordSize) + `"}`, corrupt: "more than 65536 bytes, larger than any record"},
		{name: "deeply nested", in: `{"pid": 3, "metadata": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, corrupt: "on which Python's json.loads raises RecursionError"}, // Hermes removes nothing on it: neither do we
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRecord([]byte(tt.in))
			var ce *CorruptError
			switch {
			case tt.empty:
				if !errors.Is(err, ErrEmpty) {
					t.Fatalf("got %v, want ErrEmpty", err)
				}
			case tt.corrupt != "":
				if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tt.corrupt) {
					t.Fatalf("got %v, want a CorruptError containing %q", err, tt.corrupt)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error spans lines: %q", err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if r.PID != tt.pid || r.Legacy != tt.legacy {
					t.Fatalf("got %+v", r)
				}
				if (tt.start == -1) != (r.StartTime == nil) || (r.StartTime != nil && *r.StartTime != tt.start) {
					t.Fatalf("start time %v, want %d", r.StartTime, tt.start)
				}
			}
		})
	}
}

func TestReadRecordErrors(t *testing.T) {
	dir := testdir.New(t)
	missing := filepath.Join(dir, "missing.lock")
	if _, err := ReadRecord(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	huge := filepath.Join(dir, "huge.lock")
	if err := os.WriteFile(huge, []byte(strings.Repeat("9", 10*MaxRecordSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRecord(huge)
	var fe *FileError
	var ce *CorruptError
	if !errors.As(err, &fe) || fe.Path != huge || !errors.As(err, &ce) {
		t.Fatalf("huge: %v", err)
	}
	if !strings.HasPrefix(err.Error(), huge+": corrupt record:") || !strings.Contains(err.Error(), "hermes-supervisor sweep") {
		t.Fatalf("message does not name the file and the fix: %q", err)
	}
	dirAsFile := filepath.Join(dir, "sub.lock")
	if err := os.Mkdir(dirAsFile, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(dirAsFile); !errors.As(err, &fe) {
		t.Fatalf("directory: %v", err)
	}
}

func TestLayout(t *testing.T) {
	l := Layout{Home: "/h", LockDir: "/l"}
	if got := l.ScopedLock("telegram-bot-token", "123:abc"); got != filepath.Join("/l", "telegram-bot-token-"+IdentityHash("123:abc")+".lock") || len(IdentityHash("x")) != 16 {
		t.Fatalf("scoped lock path %s", got)
	}
	for _, p := range []string{l.PIDFile(), l.RuntimeLock(), l.StateFile(), l.PlannedStopMarker(), l.TakeoverMarker(), l.SupervisorState(), l.SupervisorLock()} {
		if filepath.Dir(p) != filepath.FromSlash("/h") {
			t.Errorf("%s is not in the home", p)
		}
	}
}

// TestParseRecordAllocs holds reading a record to the allocations a
// sweep of 100 000 lock files can afford: one per string the record
// gives and a few more. Copies of the text, a map of members and errors
// made for members that are not there were 53 allocations per lock; a
// count, unlike a time, does not move with the host.
func TestParseRecordAllocs(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		most       float64
	}{
		{"scoped lock", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes", "scope": "telegram-bot-token", "identity_hash": "0123456789abcdef", "metadata": {}, "updated_at": "2026-09-01T10:00:00.123456+00:00", "profile": "default"}`, 20},
		{"legacy pid", "4242\n", 14},
	} {
		data := []byte(tt.data)
		if got := testing.AllocsPerRun(100, func() {
			if _, err := ParseRecord(data); err != nil {
				t.Fatal(err)
			}
		}); got > tt.most {
			t.Errorf("%s: %.0f allocations per read, want at most %.0f", tt.name, got, tt.most)
		}
	}
}

func BenchmarkParseRecord(b *testing.B) {
	inputs := []struct{ name, data string }{
		{"scoped-lock", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes", "scope": "telegram-bot-token", "identity_hash": "0123456789abcdef", "metadata": {}, "updated_at": "2026-09-01T10:00:00.123456+00:00", "profile": "default"}`},
		{"pid-file", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["/usr/local/bin/hermes", "gateway", "run"], "start_time": 881234, "hermes_home": "/home/ann/.hermes"}`},
		{"legacy-integer", "4242\n"},
		{"bom", "\ufeff4242"},
	}
	for _, in := range inputs {
		data := []byte(in.data)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseRecord(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkIsGatewayRun(b *testing.B) {
	argv := []string{"/usr/bin/python3", "-m", "hermes_cli.main", "-p", "work", "gateway", "run", "--external-supervisor"}
	b.ReportAllocs()
	for b.Loop() {
		if !IsGatewayRun(argv) {
			b.Fatal("not a gateway")
		}
	}
}
