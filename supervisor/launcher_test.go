package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
)

// launcher stands in for pip's and uv's hermes.exe console launcher: it
// runs argv as its child, waits, and exits with the child's code. It
// forwards no stop request (SIGTERM is caught and dropped), so only a
// request aimed at the gateway itself can stop it gracefully.
func launcher(argv []string) int {
	if term, ok := signals.Terminate(); ok {
		signal.Notify(make(chan os.Signal, 1), term)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return 127
}

// recordStart writes the working directory and PYTHONIOENCODING it was
// started with to file, then runs argv as launcher does.
func recordStart(file string, argv []string) int {
	wd, _ := os.Getwd()
	b, _ := json.Marshal(map[string]string{"dir": wd, "PYTHONIOENCODING": os.Getenv("PYTHONIOENCODING")})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return 127
	}
	return launcher(argv)
}

// The gateway is our child's child: readiness, the lock listing and the
// planned-stop marker must find it in our tree (job object or process
// group), so the stop ends with a planned exit 0 well inside the timeout.
func TestStopThroughLauncher(t *testing.T) {
	const stopTimeout = 60 * time.Second
	h := startHarnessWith(t, func(c *Config) {
		c.Command = []string{os.Args[0], "launcher", os.Args[0], demogateway.Command}
		c.StopTimeout = stopTimeout
		c.ReadyTimeout = 2 * stopTimeout // never "ready" by timing out
	})
	st := h.waitReady()
	rec := mustRecord(t, h.layout.PIDFile())
	if rec.PID == st.Child.PID {
		t.Fatalf("gateway.pid names the launcher %d: the stand-in did not run the gateway as its child", rec.PID)
	}
	status := h.sup.Do(context.Background(), "status")
	found := false
	for _, l := range status.Status.Locks {
		found = found || l.Kind == lockstore.KindScopedLock
	}
	// The demo gateway writes its scoped lock after gateway.pid.
	// Polls with a deadline: the launcher's child writing gateway.pid is an event in another process, with nothing to wait on here.
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range h.sup.Do(context.Background(), "status").Status.Locks {
			found = found || l.Kind == lockstore.KindScopedLock
		}
	}
	if !found {
		t.Errorf("status lists no scoped lock of gateway %d", rec.PID)
	}
	began := time.Now()
	r := h.sup.Do(context.Background(), "stop")
	took := time.Since(began)
	if !r.OK || r.Status.State != Stopped {
		t.Fatalf("stop answer: %+v", r)
	}
	if took > stopTimeout/3 {
		t.Errorf("stop took %s of a %s timeout: the gateway never saw its marker", took, stopTimeout)
	}
	if r.Status.LastExit == nil || r.Status.LastExit.Code != 0 || r.Status.LastExit.Signal != "" {
		t.Fatalf("gateway did not record a planned stop: %+v", r.Status.LastExit)
	}
	if _, err := os.Stat(h.layout.PlannedStopMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker left behind: %v", err)
	}
	if gs, err := lockstore.ReadState(h.layout.StateFile()); err != nil || gs.GatewayState != "stopped" {
		t.Fatalf("gateway_state.json: %+v, %v", gs, err)
	}
}

// A gateway.pid without start_time (a Hermes that cannot read its own)
// behind a launcher: where tree membership alone proves a process ours (a
// job object on Windows) the gateway is still found, so readiness comes
// from gateway.pid, status shows the gateway beside its launcher, and the
// stop is a planned exit rather than a kill after the timeout. A process
// group proves nothing alone (POSIX): there no gateway is found.
func TestLauncherGatewayWithoutStartTime(t *testing.T) {
	const stopTimeout = 60 * time.Second
	h := startHarnessWith(t, func(c *Config) {
		c.Command = []string{os.Args[0], "launcher", os.Args[0], demogateway.Command, "-no-start-time"}
		c.StopTimeout = stopTimeout
		c.ReadyTimeout = 2 * stopTimeout
		if !proctree.MembershipProvesOwnership {
			// Ready only by the timeout; the launcher forwards no SIGTERM,
			// so the stop ends in a kill.
			c.ReadyTimeout, c.StopTimeout = time.Second, 2*time.Second
		}
	})
	// Running: ready by the gateway's files, or (POSIX) by the timeout,
	// which counts it running but not ready.
	st := h.waitFor("a running gateway", func(s *Status) bool { return s.State == Running && s.Child != nil })
	rec, err := lockstore.ReadRecord(h.layout.PIDFile())
	// Polls with a deadline: the launcher's child writes gateway.pid in
	// another process, with nothing to wait on here.
	for deadline := time.Now().Add(10 * time.Second); err != nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		rec, err = lockstore.ReadRecord(h.layout.PIDFile())
	}
	if err != nil {
		t.Fatal(err)
	}
	if rec.StartTime != nil || rec.PID == st.Child.PID {
		t.Fatalf("gateway.pid %+v: want a record without start_time naming the launcher's child", rec)
	}
	got := h.sup.Do(context.Background(), "status").Status.Child
	if !proctree.MembershipProvesOwnership {
		if got.Gateway != nil || got.ReadyBy != "ready timeout" {
			t.Errorf("a process group alone proved gateway %+v (ready by %s)", got.Gateway, got.ReadyBy)
		}
		return
	}
	if got.Gateway == nil || got.Gateway.PID != rec.PID || got.Gateway.StartTime == nil {
		t.Fatalf("status shows gateway %+v beside launcher %d, want pid %d with its live start time", got.Gateway, got.PID, rec.PID)
	}
	if got.ReadyBy == "ready timeout" {
		t.Errorf("ready by %s: the gateway's own files were never read", got.ReadyBy)
	}
	var text strings.Builder
	_ = (&Status{State: Running, Child: got}).WriteText(&text, time.Now())
	if want := fmt.Sprintf("gateway:    pid %d (its launcher: pid %d)", rec.PID, got.PID); !strings.Contains(text.String(), want) {
		t.Errorf("status text lacks %q:\n%s", want, text.String())
	}
	began := time.Now()
	r := h.sup.Do(context.Background(), "stop")
	if !r.OK || r.Status.LastExit == nil || r.Status.LastExit.Code != 0 {
		t.Fatalf("stop answer %+v: want the gateway's planned exit 0", r)
	}
	if took := time.Since(began); took > stopTimeout/3 {
		t.Errorf("stop took %s of a %s timeout: the gateway never saw its marker", took, stopTimeout)
	}
}
