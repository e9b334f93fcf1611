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

// TestLongIntegerBeforeAnUnfinishedFraction: json.loads (its C scanner)
// takes a "." as a fraction only when a digit follows it, and an e or E
// as an exponent only when digits follow it (after a sign or not); else
// the digits before are an integer, made with int(), which raises
// ValueError past 4300 digits before the decoder ever meets the stray
// character. So 4301 digits then ".", "e" or "E+" raise as a plain long
// integer does (Python 3.11.7 and 3.13.0 alike), where they were read as
// a fraction or an exponent, the record called corrupt, and swept.
func TestLongIntegerBeforeAnUnfinishedFraction(t *testing.T) {
	digits := strings.Repeat("7", 4301)
	for _, tt := range []struct {
		name, body string
		raises     bool
	}{
		{"a dot, then the end", `{"pid": 7, "n": ` + digits + `.}`, true},
		{"a dot, then a letter", `{"pid": 7, "n": ` + digits + `.x}`, true},
		{"a dot at the end of the text", digits + `.`, true},
		{"an e, then the end", `{"pid": 7, "n": ` + digits + `e}`, true},
		{"an E and a sign, then the end", `{"pid": 7, "n": ` + digits + `E+}`, true},
		{"an e and a sign at the end of the text", digits + `e-`, true},
		// A digit after makes them a fraction or an exponent: float().
		{"a dot and a digit", `{"pid": 7, "n": ` + digits + `.0}`, false},
		{"an e, a sign and a digit", `{"pid": 7, "n": ` + digits + `e-0}`, false},
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

// TestUnfinishedFractionRecordIsKept: a scoped lock of a dead pid whose
// metadata holds 4301 digits and a bare "." makes acquire_scoped_lock
// raise (json.loads' ValueError), so Hermes removes nothing; it was swept
// here as a corrupt record.
func TestUnfinishedFractionRecordIsKept(t *testing.T) {
	bin := conformance.NewBin(t)
	e := conformance.NewEnv(t, bin)
	rec := e.Record(e.Dead("hermes", "gateway", "run"), e.Home)
	delete(rec, "metadata")
	j, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	scoped := e.Write(e.Scoped(), strings.TrimSuffix(string(j), "}")+`,"metadata":{"n":`+strings.Repeat("9", 4301)+`.}}`)
	e.Age(scoped, time.Hour)
	s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(es)[scoped]; got.Action != ActionKeep {
		t.Errorf("%s: %s/%s (%s), want kept", scoped, got.Verdict, got.Action, got.Reason)
	}
	if _, err := os.Stat(scoped); err != nil {
		t.Errorf("%s is gone after the sweep: %v", scoped, err)
	}
}
