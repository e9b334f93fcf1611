package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// testHelper runs the test binary as a helper process when asked to.
func testHelper(args []string) {
	switch {
	case len(args) > 0 && args[0] == "bystander":
		pidns.Bystander()
	case len(args) > 0 && args[0] == "fork-bystander-and-exit":
		forkBystanderAndExit()
	}
}

// sentinel is a process the supervisor must never signal: it exits
// pidns.Signalled on any catchable signal, and 0 when the test closes its
// stdin. It leads its own process group, as a setsid'd tmux would.
type sentinel struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	id    procstate.Identity
}

func startSentinel(t *testing.T, env ...string) *sentinel {
	t.Helper()
	cmd := exec.Command(os.Args[0], "bystander")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &sentinel{t: t, cmd: cmd, stdin: in}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Its identity as the supervisor will read it, once it runs the body
	// (exec has replaced the forked image).
	s.id = inspectSettled(t, cmd.Process.Pid)
	return s
}

// inspectSettled reads pid's identity once its command line is the test
// binary's (a forked child shows its parent's until exec).
func inspectSettled(t *testing.T, pid int) procstate.Identity {
	t.Helper()
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	deadline := time.Now().Add(10 * time.Second)
	for {
		id, err := p.Inspect(context.Background(), pid)
		if err == nil && len(id.Argv) > 1 && id.StartTime != nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never settled: %+v, %v", pid, id, err)
		}
		runtimeYield()
	}
}

// runtimeYield lets the child get to its exec; there is no event to wait on
// for that, and the loop above has a deadline.
func runtimeYield() { time.Sleep(time.Millisecond) }

// untouched closes the sentinel's stdin and fails the test unless it
// exits 0: any signal, caught or SIGKILL, shows in its exit.
func (s *sentinel) untouched() {
	s.t.Helper()
	s.stdin.Close()
	err := s.cmd.Wait()
	if err != nil {
		s.t.Fatalf("sentinel %d (%s) was signalled: %v", s.id.PID, s.id.Argv, err)
	}
}

// writeState writes a supervisor state file, as an attacker who can write
// the home (or a predecessor) would.
func writeState(t *testing.T, l lockstore.Layout, st *Status) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.SupervisorState(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func childOf(id procstate.Identity, hash string) *Child {
	return &Child{PID: id.PID, StartTime: id.StartTime, Argv: id.Argv, StartedAt: time.Now(), NonceHash: hash}
}

func thisBoot(t *testing.T) string {
	b, err := procstate.BootID()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForgedStateSignalsNothing: a state file names a live process that no
// supervisor of this home started; the old code SIGTERMed it, then killed
// its group (kill(-1) when it named pid 1). Every variant must end with our
// own gateway running and the sentinel never signalled.
func TestForgedStateSignalsNothing(t *testing.T) {
	boot := thisBoot(t)
	_, hash := newNonce()
	cases := []struct {
		name  string
		state func(h *harness, s *sentinel) *Status
		env   func(h *harness) []string
	}{
		{"old format, argv copied from /proc", func(h *harness, s *sentinel) *Status {
			return &Status{State: Running, Child: childOf(s.id, "")}
		}, nil},
		{"this boot, a nonce hash the process does not carry", func(h *harness, s *sentinel) *Status {
			return &Status{State: Running, BootID: boot, NonceHash: hash, Child: childOf(s.id, hash)}
		}, nil},
		{"forged tags of a dead supervisor", func(h *harness, s *sentinel) *Status {
			return &Status{State: Running, BootID: boot, NonceHash: hash, Command: s.id.Argv}
		}, func(h *harness) []string {
			return []string{"HERMES_HOME=" + h.layout.Home, EnvSupervisor + "=4194999:12345"}
		}},
		{"the real nonce, but a state file of another boot", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHome(t)
			var env []string
			if c.env != nil {
				env = c.env(h)
			}
			state := c.state
			if state == nil {
				nonce, hash := newNonce()
				env = []string{"HERMES_HOME=" + h.layout.Home, EnvNonce + "=" + nonce}
				state = func(h *harness, s *sentinel) *Status {
					return &Status{State: Running, BootID: "another-boot", NonceHash: hash, Child: childOf(s.id, hash), Command: s.id.Argv}
				}
			}
			s := startSentinel(t, env...)
			writeState(t, h.layout, state(h, s))
			h.run(func(c *Config) { c.StopTimeout = time.Second })
			st := h.waitReady()
			if st.Child.PID == s.id.PID || st.Child.Adopted {
				t.Fatalf("adopted the sentinel: %+v", st.Child)
			}
			s.untouched()
		})
	}
}

// TestForgedStateNamingSelf: the state file names the supervisor's own
// process, with its real start time and argv. (Pid 1 is refused by
// TestProofRefusesInitAndSelf here and run end to end only inside the chaos
// suite's private pid namespace: the old code turned it into kill(-1),
// which as root ends every process of the machine.)
func TestForgedStateNamingSelf(t *testing.T) {
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	id, err := p.Self(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := newHome(t)
	_, hash := newNonce()
	writeState(t, h.layout, &Status{State: Running, BootID: thisBoot(t), NonceHash: hash, Child: childOf(id, hash), Command: id.Argv})
	h.run(func(c *Config) { c.StopTimeout = time.Second })
	if st := h.waitReady(); st.Child.PID == id.PID {
		t.Fatalf("adopted the supervisor itself")
	}
}

func TestProofRefusesInitAndSelf(t *testing.T) {
	p := proof{prober: procstate.NewProber(procstate.Options{StartTolerance: -1}), self: os.Getpid(), home: "/h", hashes: []string{"x"}}
	for _, pid := range []int{-1, 0, 1, os.Getpid()} {
		if _, err := p.check(context.Background(), pid); !errors.Is(err, ErrNotProven) {
			t.Errorf("check(%d) = %v, want ErrNotProven", pid, err)
		}
	}
}

// TestReclaimNeedsTheNonce is the positive side: a gateway that carries the
// nonce of a state file of this boot is reclaimed (stopped, replaced),
// whether the state file names it or not, while a process that carries the
// nonce outside its group (a tmux the agent started) is left alone.
func TestReclaimNeedsTheNonce(t *testing.T) {
	for _, recorded := range []bool{true, false} {
		t.Run("recorded="+strconv.FormatBool(recorded), func(t *testing.T) {
			h := newHome(t)
			nonce, hash := newNonce()
			env := []string{"HERMES_HOME=" + h.layout.Home, "HERMES_GATEWAY_LOCK_DIR=" + h.layout.LockDir, EnvNonce + "=" + nonce}
			gw := exec.Command(os.Args[0], "demo-gateway")
			gw.Env = append(os.Environ(), env...)
			gw.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := gw.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = gw.Process.Kill(); _ = gw.Wait() })
			id := inspectSettled(t, gw.Process.Pid)
			tmux := startSentinel(t, env...)
			st := &Status{State: Running, BootID: thisBoot(t), NonceHash: hash, Command: id.Argv}
			if recorded {
				st.Child = childOf(id, hash)
			}
			writeState(t, h.layout, st)
			h.run(func(c *Config) {})
			ready := h.waitReady()
			if ready.Child.PID == id.PID {
				t.Fatalf("kept the old gateway")
			}
			err := gw.Wait()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			tmux.untouched()
		})
	}
}

// TestHostileStateFileDoesNotHangStartUp: a FIFO (or a link to /dev/zero)
// at the state file hung begin() with SIGTERM ignored, or ate memory.
func TestHostileStateFileDoesNotHangStartUp(t *testing.T) {
	for _, kind := range []string{"fifo", "link to dev zero", "huge sparse file"} {
		t.Run(kind, func(t *testing.T) {
			h := newHome(t)
			files := testdir.Hostile(t, t.TempDir())
			if err := os.Rename(files[kind], h.layout.SupervisorState()); err != nil {
				t.Fatal(err)
			}
			h.run(func(c *Config) {})
			h.waitReady()
		})
	}
}

// TestUnprovableOrphanIsAbandoned: a reclaimed gateway that can no longer be
// proven ours (or cannot be killed) when the stop timeout fires is left
// alone and stops being waited for, so the supervisor answers stop. The
// old code waited forever on a pid it could not end (pid 1 after kill(-1)).
func TestUnprovableOrphanIsAbandoned(t *testing.T) {
	s := startSentinel(t)
	p := proof{prober: procstate.NewProber(procstate.Options{StartTolerance: -1}), self: os.Getpid(), home: "/nowhere", hashes: []string{"not-its-nonce"}}
	o := newOrphan(s.id, p, zaptest.NewLogger(t), SystemClock{}, time.Now(), nil)
	done := make(chan Exit, 1)
	go func() { done <- o.wait(context.Background()) }()
	if err := o.Terminate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-done:
		if !o.isAbandoned() || !strings.Contains(e.Orphan, "left running") {
			t.Fatalf("exit %+v, abandoned %v", e, o.isAbandoned())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting on an orphan it may not signal")
	}
	s.untouched()
}
