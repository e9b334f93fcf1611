package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform"
)

// launcher stands in for pip's and uv's hermes.exe console launcher: it
// runs argv as its child, waits, and exits with the child's code. It
// forwards no stop request (SIGTERM is caught and dropped), so only a
// request aimed at the gateway itself can stop it gracefully.
func launcher(argv []string) int {
	if term, ok := platform.TerminateSignal(); ok {
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
