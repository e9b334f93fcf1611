//go:build unix

package proctree

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the children the tests need.
func TestMain(m *testing.M) {
	switch os.Getenv("PLATFORM_HELPER") {
	case "lock":
		f, err := os.OpenFile(os.Getenv("PLATFORM_LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = safefs.LockFile(f)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "parent": // start a grandchild, print its pid, then block or exit
		// Handle SIGTERM before reporting ready, or the test's signal can
		// arrive first and kill us with the default action.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		if os.Getenv("PLATFORM_GO") != "" {
			// Wait for the word: until then the test may still be moving us.
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
		if os.Getenv("PLATFORM_SETSID") != "" {
			// Out of the tree's process group, as setsid(1) would.
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := gc.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(gc.Process.Pid) + "\n")
		if os.Getenv("PLATFORM_NOBODY_TOO") != "" {
			// A second child, of another user: as a setuid one would be.
			other := exec.Command(os.Args[0])
			other.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
			other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			if err := other.Start(); err != nil {
				os.Exit(3)
			}
			os.Stdout.WriteString(strconv.Itoa(other.Process.Pid) + "\n")
		}
		if os.Getenv("PLATFORM_EXIT") != "" {
			os.Exit(0)
		}
		<-sigs
		os.Exit(7) // SIGTERM received
	case "escape": // a tree that tries to outlive its kill: see escape_unix_test.go
		escapeHelper()
	case "sleep":
		// Not select{}: without cgo the runtime would call it a deadlock.
		for {
			time.Sleep(time.Hour)
		}
	}
	// Orphaned grandchildren are reparented to us, so the test can see them
	// die instead of guessing.
	becomeSubreaper()
	os.Exit(m.Run())
}

// startParent starts a helper that spawns a grandchild and reports its pid.
func startParent(t *testing.T, exitAtOnce bool) (*Tree, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent")
	if exitAtOnce {
		cmd.Env = append(cmd.Env, "PLATFORM_EXIT=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	return tree, gc
}

// waitGone reaps pid (reparented to us, the subreaper) and fails if it
// does not die.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == nil && !ws.Signaled() {
			err = errors.New("exited, not killed")
		}
		if errors.Is(err, unix.ECHILD) {
			// Not our child (no subreaper on this OS): watch it instead,
			// polled, since only a parent or a pidfd (Linux) hears an exit.
			for unix.Kill(pid, 0) == nil {
				time.Sleep(10 * time.Millisecond)
			}
			err = nil
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("grandchild %d: %v", pid, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("grandchild %d still runs", pid)
	}
}

func TestTreeKillTakesGrandchildren(t *testing.T) {
	tree, gc := startParent(t, false)
	if err := tree.Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := tree.Wait(context.Background())
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Fatalf("root: %v", err)
	}
	waitGone(t, gc)
	if err := tree.Kill(); err != nil {
		t.Fatalf("Kill after Wait must be a no-op: %v", err)
	}
}

func TestWaitKillsLeftoverGrandchildren(t *testing.T) {
	tree, gc := startParent(t, true)
	if _, err := tree.Wait(context.Background()); err != nil {
		t.Fatalf("root exit: %v", err)
	}
	waitGone(t, gc)
}

func TestTerminateSignalsOnlyTheRoot(t *testing.T) {
	tree, gc := startParent(t, false)
	if err := tree.Terminate(); err != nil {
		t.Fatal(err)
	}
	_, err := tree.Wait(context.Background())
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 7 {
		t.Fatalf("root did not handle SIGTERM itself: %v", err)
	}
	waitGone(t, gc)
}

func TestKillGroupTakesALostTree(t *testing.T) {
	// A gateway whose supervisor died: we hold no Tree for it, only its pid.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	if err := KillGroup(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("leader: %v", err)
	}
	waitGone(t, gc)
}

func TestKillGroupRefusesInitAndSelf(t *testing.T) {
	// Old code turned KillGroup(1) into kill(-1, SIGKILL): every process of
	// the user. Self and our own group are refused the same way.
	for _, pid := range []int{-1, 0, 1, os.Getpid()} {
		if err := KillGroup(pid); !errors.Is(err, ErrRefused) {
			t.Errorf("KillGroup(%d) = %v, want ErrRefused", pid, err)
		}
		if err := KillProcess(pid); !errors.Is(err, ErrRefused) {
			t.Errorf("KillProcess(%d) = %v, want ErrRefused", pid, err)
		}
	}
}

func TestKillGroupOfAMemberSparesItsGroup(t *testing.T) {
	// A process that does not lead its group is killed alone: the number
	// is only ever used as a group id after getpgid(pid) == pid.
	start := func(pgid int) *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	leader := start(0)
	t.Cleanup(func() { _ = leader.Process.Kill(); _ = leader.Wait() })
	member := start(leader.Process.Pid)
	if err := KillGroup(member.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := member.Wait(); err == nil || member.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("member: %v", err)
	}
	if err := unix.Kill(leader.Process.Pid, 0); err != nil {
		t.Fatalf("the group's leader was signalled too: %v", err)
	}
}
