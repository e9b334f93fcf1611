//go:build unix

package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestStopHermesSparesAnotherUsersGateway is review's attack on
// `sudo install --system --migrate`: the home comes from the invoking
// user's config file or a HERMES_HOME sudo kept, so it may name another
// user's home, whose gateway, proven by its own records, root would stop.
// Hermes' own `gateway stop`, run as the user, gets EPERM there. The
// gateway runs as nobody: StopHermes for any other user must refuse, in
// one error, and leave it running with no marker; for nobody it stops it.
func TestStopHermesSparesAnotherUsersGateway(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a gateway as another user needs root")
	}
	const nobody = 65534
	dir := testdir.Open(t)
	bin := testdir.OpenCopy(t, "supervisor.test")
	e := newStopHermesEnvIn(t, dir)
	for _, d := range []string{e.layout.Home, e.layout.LockDir} {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	ready := filepath.Join(e.layout.Home, "grandchild.pid")
	cmd := exec.Command(bin, demogateway.Command, "-home", e.layout.Home, "-lock-dir", e.layout.LockDir,
		"-spawn-grandchild", "-grandchild-pid-file", ready)
	cmd.Env = append(gatewayEnv(e.layout), "TMPDIR=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var exit error
	go func() { exit = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	e.grandchild(ready)
	rec := mustRecord(t, e.layout.PIDFile())
	if rec.PID != cmd.Process.Pid {
		t.Fatalf("gateway.pid names %d, not the gateway %d", rec.PID, cmd.Process.Pid)
	}

	for _, uid := range []*int{nil, new(int)} { // nil: this process's uid, root's
		err := HermesStop{Layout: e.layout, Wait: time.Second, UID: uid}.StopHermes(context.Background())
		if !errors.Is(err, ErrHermesStillRuns) || !strings.Contains(err.Error(), "runs as uid 65534") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("StopHermes for uid %v over nobody's gateway: %v, want one line saying it runs as uid 65534", uid, err)
		}
		if _, err := os.Stat(e.layout.PlannedStopMarker()); err == nil {
			t.Fatal("a planned-stop marker was written for another user's gateway")
		}
		select {
		case <-done:
			t.Fatalf("nobody's gateway was stopped for uid %v: %v", uid, exit)
		default:
		}
		if obs := e.prober.Judge(context.Background(), rec.Identity(), lockstore.IsGatewayArgv); obs.Verdict != procstate.Alive {
			t.Fatalf("nobody's gateway is %v after a refused stop: %s", obs.Verdict, obs.Reason)
		}
	}
	uid := nobody
	if err := (HermesStop{Layout: e.layout, Wait: 5 * time.Second, UID: &uid}).StopHermes(context.Background()); err != nil {
		t.Fatalf("StopHermes for nobody over nobody's gateway: %v", err)
	}
	<-done
	if exit != nil {
		t.Errorf("nobody's gateway did not exit 0 on the marker: %v", exit)
	}
}
