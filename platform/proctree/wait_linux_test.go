package proctree

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// procState is the state letter of pid in /proc/<pid>/stat.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return err.Error()
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// pidfdExited answers from the pidfd without reaping: a running child is
// not exited, a dead one is, and stays a zombie (its pid still reserved).
func TestPidfdExitedNeverReaps(t *testing.T) {
	c := startSleeper(t)
	// Linux 5.3 or later, as CI has: without pidfds waitExited blocks in
	// waitid on a thread instead, and there is nothing here to test.
	fd, err := openPidfd(c.Process.Pid)
	if err != nil {
		t.Fatalf("open a pidfd: %v", err)
	}
	defer unix.Close(fd)
	if exited, err := pidfdExited(fd); exited || err != nil {
		t.Fatalf("a running child: exited %v, err %v", exited, err)
	}
	if err := unix.Kill(c.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and asking again still finds it
		if exited, err := pidfdExited(fd); !exited || err != nil {
			t.Fatalf("a killed child: exited %v, err %v", exited, err)
		}
	}
	if st := procState(c.Process.Pid); st != "Z" {
		t.Fatalf("the child is %q after pidfdExited, want Z: it was reaped", st)
	}
}

// A tree's wait sees its root's exit through the poller, and only then:
// the root is a zombie when waitExited returns, not reaped and not alive.
func TestWaitExitedPollsThePidfd(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
	tree, err := Start(cmd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tree.Kill(); _, _ = tree.Wait(t.Context()) })
	type polled struct {
		ok    bool
		state string
	}
	done := make(chan polled, 1)
	go func() {
		ok := tree.pollExited()
		done <- polled{ok, procState(cmd.Process.Pid)}
	}()
	if err := unix.Kill(cmd.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if p := <-done; !p.ok || p.state != "Z" {
		t.Fatalf("pollExited: %v with the root in state %q; want true, with the root a zombie", p.ok, p.state)
	}
}
