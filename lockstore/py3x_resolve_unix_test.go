//go:build !windows

package lockstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestHomeResolvedPastALoop: Python 3.13 rewrote posixpath.realpath, and
// with it Path.resolve(strict=False): a link found to loop is kept as it
// stands and the rest of the path is resolved on from there, links and
// all. 3.11 and 3.12 stop at the loop and only normalize the rest. So a
// hermes_home of <dir>/loop/../lhome, lhome a link to the home, is this
// home to 3.13 and 3.14 (current Hermes) and <dir>/lhome, another home,
// to 3.11 (whose stat finds no loop there, so it does not raise). With
// the lock held by a live gateway, current Hermes' get_running_pid keeps
// its gateway.pid; it was swept here as another home's.
func TestHomeResolvedPastALoop(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		name     string
		recorded string // hermes_home, under the home's parent
		keep     bool
	}{
		{"through a loop, then a link to the home", "loop/../lhome", true},
		{"a link whose target passes a loop", "via", true},
		{"a two-link loop, then a link to the home", "ping/x/../../lhome", true},
		// Another home to every Python: the loop changes nothing there.
		{"through a loop, then another home", "loop/../other", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			dir := filepath.Dir(e.Home)
			for link, target := range map[string]string{
				"loop": "loop", "ping": "pong", "pong": "ping",
				"lhome": filepath.Base(e.Home), "via": "loop/../lhome",
			} {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			// Not Join, which would clean it.
			if got := liveGatewayRecordNaming(t, e, dir+"/"+tt.recorded); (got.Action == ActionKeep) != tt.keep {
				t.Fatalf("hermes_home %s: %s/%s (%s), want kept %v", tt.recorded, got.Verdict, got.Action, got.Reason, tt.keep)
			}
		})
	}
}

// liveGatewayRecordNaming judges, as Scan does, the gateway.pid of a live
// gateway under a held runtime lock whose record names home as its
// hermes_home: kept where Hermes finds home to be e's, swept where it
// finds another, kept where its resolve() raises.
func liveGatewayRecordNaming(t *testing.T, e *conformance.Env, home string) Entry {
	t.Helper()
	e.HoldLock(e.RuntimeLock())
	p := e.Sleeper("hermes", "gateway", "run")
	path := e.Write(e.PIDFile(), e.Record(p, home))
	s := New(Layout{Home: e.Home, LockDir: e.LockDir}, prober, zaptest.NewLogger(t), time.Now)
	es, err := s.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return byPath(es)[path]
}

// TestSameHomeAsEachPython: sameHome calls two homes one where the
// resolve() of Python 3.11 and 3.12, or that of 3.13 and later, finds
// them one; it reports the loop 3.11 and 3.12 raise on. Each case was
// run on the same layout with Python 3.11.7 and 3.13.0.
func TestSameHomeAsEachPython(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"real/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"loop": "loop", "a": "b", "b": "a", "lreal": "real", "viax": "loop/../lreal",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		a, b string
		// py311 and py313: whether _same_hermes_home is true there;
		// raises: 3.11's resolve() raises (3.13's never does).
		py311, py313, raises bool
	}{
		{"/loop/../lreal", "/real", false, true, false},
		{"/loop/../lreal/sub", "/real/sub", false, true, false},
		{"/viax", "/real", false, true, false},
		{"/a/../lreal", "/lreal", false, true, false},
		{"/a/../lreal", "/real", false, true, false},
		{"/loop/x/../../lreal", "/real", false, true, false},
		{"/loop/../loop/../lreal", "/real", false, true, false},
		{"/loop/../other", "/real", false, false, false},
		{"/lreal/../real", "/real", true, true, false},
		{"/loop", "/loop", true, true, true},
		{"/loop/x", "/real", false, false, true},
	} {
		same, unknown := sameHome(base+tt.a, base+tt.b)
		raises := unknown != ""
		if raises != tt.raises || (!raises && same != (tt.py311 || tt.py313)) {
			t.Errorf("%s, %s: same %v raises %v; Python 3.11 %v, 3.13 %v, 3.11 raises %v",
				tt.a, tt.b, same, raises, tt.py311, tt.py313, tt.raises)
		}
	}
}
