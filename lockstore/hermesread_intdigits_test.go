package lockstore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestReadLongIntegers: json.loads reads an integer literal through
// int(), which raises ValueError past the interpreter's limit: 4300
// digits by default (sys.int_info's default_max_str_digits, on 3.11.7,
// 3.12.1 and 3.13.0 alike), 640 where PYTHONINTMAXSTRDIGITS or -X
// int_max_str_digits lowers it as far as it goes. It is no
// JSONDecodeError, so Hermes' _read_json_file does not catch it, and the
// Hermes code reading the file removes nothing. Such a record is read as
// one Hermes raises on, like one nested too deep. A fraction or exponent
// goes through float(), which has no limit, and a string is no integer.
func TestReadLongIntegers(t *testing.T) {
	digits := func(n int) string { return strings.Repeat("7", n) }
	for _, tt := range []struct {
		name, body string
		raises     bool
	}{
		{"a bare pid of 641 digits", digits(641), true},
		{"a bare pid of 640 digits", digits(640), false},
		{"a negative one of 641 digits", "-" + digits(641), true},
		{"a negative one of 640 digits", "-" + digits(640), false},
		{"a bare pid of 4301 digits", digits(4301), true},
		{"deep in the record", `{"pid": 7, "metadata": {"n": [1, ` + digits(5000) + `]}}`, true},
		{"as the pid", `{"pid": ` + digits(641) + `}`, true},
		{"with a fraction", `{"pid": 7, "n": ` + digits(5000) + `.5}`, false},
		{"with an exponent", `{"pid": 7, "n": ` + digits(5000) + `e2}`, false},
		{"a fraction of many digits", `{"pid": 7, "n": 0.` + digits(5000) + `}`, false},
		{"an exponent of many digits", `{"pid": 7, "n": 1e-` + digits(5000) + `}`, false},
		{"in a string", `{"pid": 7, "n": "` + digits(5000) + `"}`, false},
		{"after an escaped quote in a string", `{"pid": 7, "n": "\"` + digits(5000) + `"}`, false},
		// json.loads' C scanner takes a "." as a fraction only when a digit
		// follows it, and an e or E as an exponent only when digits follow
		// (after a sign or not); else the digits before are an integer,
		// made with int(), which raises before the decoder meets the stray
		// character (Python 3.11.7 and 3.13.0 alike).
		{"a dot, then the end", `{"pid": 7, "n": ` + digits(641) + `.}`, true},
		{"a dot, then a letter", `{"pid": 7, "n": ` + digits(641) + `.x}`, true},
		{"a dot at the end of the text", digits(641) + `.`, true},
		{"an e, then the end", `{"pid": 7, "n": ` + digits(641) + `e}`, true},
		{"an E and a sign, then the end", `{"pid": 7, "n": ` + digits(641) + `E+}`, true},
		{"an e and a sign at the end of the text", digits(641) + `e-`, true},
		// A digit after makes them a fraction or an exponent: float().
		{"a dot and a digit", `{"pid": 7, "n": ` + digits(641) + `.0}`, false},
		{"an e, a sign and a digit", `{"pid": 7, "n": ` + digits(641) + `e-0}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readJSONFile([]byte(tt.body), true)
			var ce *CorruptError
			if got := errors.As(err, &ce) && ce.hermesRaises; got != tt.raises {
				t.Fatalf("hermesRaises=%v (%v), want %v", got, err, tt.raises)
			}
		})
	}
}

// TestLongIntegerRecordsAreKept: acquire_scoped_lock, and get_running_pid
// under a held lock, raise on a record json.loads raises on, and remove
// nothing: such a scoped lock of a dead pid, and such a bare gateway.pid,
// were swept here as a dead pid's. Under Python's lowest limit (640
// digits) one of 641 digits raises, so it is kept whatever limit the
// gateway reading it runs with; one digit fewer reads under every limit,
// and is swept.
func TestLongIntegerRecordsAreKept(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		name  string
		n     int
		after string // what follows the metadata's digits
		keep  bool
	}{
		{"641 digits", 641, "", true},
		{"640 digits", 640, "", false},
		// A bare "." is no fraction: the digits are int()'s, and raise.
		{"641 digits and a bare dot", 641, ".", true},
		{"4301 digits, past the default limit too", 4301, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			dead := e.Dead("hermes", "gateway", "run")
			rec := e.Record(dead, e.Home)
			delete(rec, "metadata")
			j, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			b := strings.TrimSuffix(string(j), "}") + `,"metadata":{"n":` + strings.Repeat("9", tt.n) + tt.after + `}}`
			scoped := e.Write(e.Scoped(), b)
			e.HoldLock(e.RuntimeLock())
			pidFile := e.Write(e.PIDFile(), "9"+strings.Repeat("0", tt.n-1))
			e.Age(scoped, time.Hour)
			e.Age(pidFile, time.Hour)
			s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
			es, err := s.Sweep(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{scoped, pidFile} {
				got := byPath(es)[path]
				if (got.Action == ActionKeep) != tt.keep {
					t.Errorf("%s: %s/%s (%s), want kept %v", path, got.Verdict, got.Action, got.Reason, tt.keep)
				}
				if _, err := os.Stat(path); (err == nil) != tt.keep {
					t.Errorf("%s: exists %v after the sweep, want %v", path, err == nil, tt.keep)
				}
			}
		})
	}
}
