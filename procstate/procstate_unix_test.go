//go:build unix

package procstate

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

func stopProcess(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Windows has neither stopped processes nor zombies.
func TestZombieAndStopped(t *testing.T) {
	p := NewProber(Options{StartTolerance: -1})
	ctx := context.Background()
	cmd, _ := start(t, true)
	id, err := p.Inspect(ctx, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stopProcess(t, cmd.Process)
	waitVerdict(t, p, id, Stopped)
	_ = cmd.Process.Kill() // not reaped: a zombie until Wait
	waitVerdict(t, p, id, Zombie)
	_ = cmd.Wait()
	waitVerdict(t, p, id, Dead)
}

// waitVerdict polls (bounded) until the kernel reports the state change a
// signal causes asynchronously.
func waitVerdict(t *testing.T, p *Prober, id Identity, want Verdict) {
	t.Helper()
	var last Observation
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if last = p.Judge(context.Background(), id, isGateway); last.Verdict == want {
			return
		}
	}
	t.Fatalf("verdict %s (%s), want %s", last.Verdict, last.Reason, want)
}
