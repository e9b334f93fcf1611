package supervisor

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestForeignGatewayOnlyStateNames: a live gateway of this home that only
// gateway_state.json names (gateway.lock free or missing, as after a
// restore, a sync or an `rm` under it) holds the home, as Hermes'
// get_running_pid finds it through get_runtime_status_running_pid. The
// supervisor must back off and say why, and neither start its own
// gateway, kill that one, nor delete its gateway.pid.
func TestForeignGatewayOnlyStateNames(t *testing.T) {
	bin := conformance.NewBin(t)
	for _, tt := range []struct {
		name           string
		lock, pidFile  bool
		state, badName string
	}{
		{name: "lock free, gateway.pid kept", lock: true, pidFile: true, state: "running"},
		{name: "no gateway.lock, no gateway.pid", state: "running"},
		{name: "lock free, no gateway.pid, degraded", lock: true, state: "degraded"},
		// Hermes records psutil's epoch start time for a process whose
		// name is not UTF-8 (Linux).
		{name: "lock free, gateway named herm\\xffes", lock: true, pidFile: true, state: "starting", badName: "herm\xffes"},
	} {
		if tt.badName != "" && !conformance.NamesProcesses() {
			continue // no such process can exist on this OS
		}
		t.Run(tt.name, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			var env []string
			if tt.badName != "" {
				env = append(env, "CONFORMANCE_COMM="+tt.badName)
			}
			gw := e.Start("sleep", "hermes", []string{"gateway", "run"}, env...)
			prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
			l, err := prober.Look(context.Background(), gw.PID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.badName != "" && l.EpochStartTime == nil {
				// NamesProcesses holds only where /proc gives the epoch fallback.
				t.Fatalf("pid %d named %q has no epoch start time: the /proc fallback Hermes takes for it is missing", gw.PID, tt.badName)
			}
			rec := e.Record(gw, e.Home)
			rec["start_time"] = l.HermesStartTime()
			if tt.lock {
				e.FreeLock()
			}
			var pidSnap conformance.Snapshot
			if tt.pidFile {
				e.Write(e.PIDFile(), rec)
				pidSnap = conformance.Snap(t, e.PIDFile())
			}
			rec["gateway_state"] = tt.state
			e.Write(e.StateFile(), rec)

			h, st := backOffIn(t, e, prober)
			want := "gateway_state.json names live gateway pid " + strconv.Itoa(gw.PID)
			if st.Child != nil || !strings.Contains(st.Reason, want) {
				t.Fatalf("%s (%s), child %+v; want a back-off naming %q", st.State, st.Reason, st.Child, want)
			}
			h.end()
			now, err := prober.Look(context.Background(), gw.PID)
			if err != nil || !procstate.StartTimesEqual(l.StartTime, now, h.clock.Now()) {
				t.Fatalf("the foreign gateway is gone: %v", err)
			}
			// Every retry before the cancel refused too: the supervisor never
			// left back-off, and no gateway of ours was started.
			for _, entry := range h.logs.All() {
				if to := entry.ContextMap()["to"]; entry.Message == "state" && (to == string(Starting) || to == string(Running)) {
					t.Fatalf("the supervisor went on to %v: %s", to, entry.Message)
				}
			}
			if tt.pidFile {
				pidSnap.Same(t, e.PIDFile())
			} else if _, err := os.Stat(e.PIDFile()); !os.IsNotExist(err) {
				t.Fatalf("a gateway.pid appeared: %v", err)
			}
		})
	}
}

// backOffIn runs a supervisor on e's home and lock dir, judging processes
// with prober, and returns it with its first back-off or start.
func backOffIn(t *testing.T, e *conformance.Env, prober *procstate.Prober) (*harness, *Status) {
	t.Helper()
	h := &harness{t: t, layout: lockstore.Layout{Home: e.Home, LockDir: e.LockDir}, clock: &offsetClock{},
		states: make(chan *Status, 4096), done: make(chan error, 1), prober: prober}
	h.run(func(*Config) {})
	return h, h.waitFor("a back-off", func(s *Status) bool { return s.State == Backoff || s.Child != nil })
}

// end cancels h's supervisor and waits for its Run to return.
func (h *harness) end() {
	h.cancel()
	<-h.done
	h.done <- nil // for the harness's cleanup
}
