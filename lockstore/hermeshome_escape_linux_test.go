package lockstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// pyJSONString is json.dumps of a str Python holds for the bytes of s:
// os.fsdecode maps a byte that is not UTF-8 to a lone surrogate U+DC80 to
// U+DCFF, and ensure_ascii writes it as a \udcXX escape.
func pyJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\u%04x`, 0xdc00+int(s[0]))
		case r < 0x80 && r != '"' && r != '\\' && r >= 0x20:
			b.WriteRune(r)
		default:
			q, _ := json.Marshal(string(r))
			b.Write(q[1 : len(q)-1])
		}
		s = s[n:]
	}
	b.WriteByte('"')
	return b.String()
}

// TestEscapedHomeIsComparedAsPython: a hermes_home holding a lone
// surrogate escape. Hermes writes a home path byte that is not UTF-8 as
// \udcXX (_build_pid_record, then json.dump), and _same_hermes_home
// compares it by those bytes again (surrogateescape), so its own live
// gateway's gateway.pid under a held gateway.lock stands
// (get_running_pid, gateway/status.py @ 00067189). A high surrogate
// \ud800 cannot become a path at all: resolve() raises
// UnicodeEncodeError, and Hermes removes nothing. Go's JSON reads both as
// U+FFFD, another home.
func TestEscapedHomeIsComparedAsPython(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		name string
		// home is the name of the judged home; recorded the JSON of
		// the hermes_home written, given the home's path.
		home     string
		recorded func(home string) string
	}{
		{"not UTF-8, as Python writes it", "h\xe9", pyJSONString},
		{"a high surrogate", "home", func(home string) string { return strings.TrimSuffix(pyJSONString(home), `"`) + `/\ud800"` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			e.Home = filepath.Join(filepath.Dir(e.Home), tt.home)
			if err := os.MkdirAll(e.Home, 0o700); err != nil {
				t.Fatal(err)
			}
			e.HoldLock(e.RuntimeLock())
			p := e.Sleeper("hermes", "gateway", "run")
			rec := e.Record(p, "")
			rec["argv"] = conformance.GatewayArgv
			delete(rec, "hermes_home")
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			home := tt.recorded(e.Home)
			path := e.Write(e.PIDFile(), string(b[:len(b)-1])+`,"hermes_home":`+home+`}`)
			s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
			es, err := s.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := byPath(es)[path]; got.Action != ActionKeep {
				t.Fatalf("hermes_home %s: %s/%s (%s), want keep", home, got.Verdict, got.Action, got.Reason)
			}
		})
	}
}
