package proctree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	if _, exited, err := pidfdExited(fd); exited || err != nil {
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
		if _, exited, err := pidfdExited(fd); !exited || err != nil {
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
		_, pidfd, ok := tree.pollExited()
		if pidfd != nil {
			defer pidfd.Close()
		}
		done <- polled{ok, procState(cmd.Process.Pid)}
	}()
	if err := unix.Kill(cmd.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if p := <-done; !p.ok || p.state != "Z" {
		t.Fatalf("pollExited: %v with the root in state %q; want true, with the root a zombie", p.ok, p.state)
	}
}

// TestChildStatusIsWaits reads how a child ended from waitid's siginfo,
// without reaping it, and then reaps it: the two must say the same, for
// each way a process can end.
func TestChildStatusIsWaits(t *testing.T) {
	for _, script := range []string{
		"exit 0", "exit 3", "exit 75", "exit 78", "exit 255",
		"kill -KILL $$", "kill -TERM $$", "kill -SEGV $$", "kill -ABRT $$", "kill -HUP $$",
	} {
		t.Run(script, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", "ulimit -c 0; "+script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
				t.Fatal(err)
			}
			known, got := childStatus(&info, cmd.Process.Pid)
			if !known {
				t.Fatalf("siginfo not read as the exit of %d", cmd.Process.Pid)
			}
			if again, _ := childStatus(&info, cmd.Process.Pid+1); again {
				t.Fatal("another pid's exit was taken for this one's")
			}
			want := exitError(cmd.Wait())
			if !sameEnd(got, want) {
				t.Fatalf("siginfo says %v, the reap says %v", got, want)
			}
		})
	}
}

func sameEnd(a, b error) bool {
	var ea, eb *ExitError
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a == nil && b == nil
	}
	return *ea == *eb
}

// TestWaitReapsAfter: a root that writes its own files (an *os.File, as
// the supervisor's gateways do) gives Wait how it ended before it is
// reaped. The test holds the reap back: Wait must return all the same,
// with the root a zombie, its pid reserved; the reap follows once let go,
// without anyone waiting for it, and strikes the root off the Reaper's.
func TestWaitReapsAfter(t *testing.T) {
	r, err := BecomeSubreaper()
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd := exec.Command("sh", "-c", "exit 75")
	cmd.Stdout, cmd.Stderr = devnull, devnull
	tree, err := Start(cmd, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	tree.beforeReap = func() { <-hold }
	var once sync.Once
	letGo := func() { once.Do(func() { close(hold) }) }
	defer letGo()
	done := make(chan error, 1)
	go func() { _, err := tree.Wait(context.Background()); done <- err }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait still waits 30 s after the root exited: it waits for the reap")
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 75 || ee.Signal != 0 {
		t.Fatalf("Wait: %v, want exit status 75", err)
	}
	if st := procState(cmd.Process.Pid); st != "Z" {
		t.Fatalf("the root is %q when Wait returns, want Z: unreaped, its pid reserved", st)
	}
	if !r.isRoot(cmd.Process.Pid) {
		t.Fatal("the unreaped root is no longer a root to the Reaper, which could reap it")
	}
	// The pidfd the exit was seen through is closed with the reap, off
	// the restart's path, and not leaked.
	pidfd := tree.sys.exitWatch
	if pidfd == nil || !fdOpen(t, pidfd) {
		t.Fatal("Wait returned without the pidfd it saw the exit through open: it was closed on the restart's path")
	}
	letGo()
	select {
	case <-tree.gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the root was not reaped 30 s after Wait returned")
	}
	if pidfd.Fd() != ^uintptr(0) {
		t.Fatal("the pidfd is still open after the reap: it leaks")
	}
	if err := unix.Kill(cmd.Process.Pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("pid %d after the reap: %v, want ESRCH", cmd.Process.Pid, err)
	}
	if r.isRoot(cmd.Process.Pid) {
		t.Fatal("the reaped root is still one of the Reaper's roots")
	}
	if _, err := tree.Wait(context.Background()); !errors.Is(err, ErrWaited) {
		t.Fatalf("a second Wait: %v, want ErrWaited", err)
	}
}

// TestWaitReapsFirstWhenExecWaits: where exec's own Wait has more to do
// than reap (copy output through a goroutine of its own, honour a Cancel
// or a WaitDelay), Wait reaps before it returns, so that what exec's Wait
// says is what Wait says, and the copy is done.
func TestWaitReapsFirstWhenExecWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(out *strings.Builder) *exec.Cmd
	}{
		{"output copied", func(out *strings.Builder) *exec.Cmd {
			cmd := exec.Command("sh", "-c", "printf 'all of it'; exit 3")
			cmd.Stdout = out
			return cmd
		}},
		{"wait delay", func(*strings.Builder) *exec.Cmd {
			cmd := exec.Command("sh", "-c", "exit 3")
			cmd.WaitDelay = time.Minute
			return cmd
		}},
		{"cancel", func(*strings.Builder) *exec.Cmd {
			return exec.CommandContext(t.Context(), "sh", "-c", "exit 3")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			cmd := tc.make(&out)
			tree, err := Start(cmd, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tree.Wait(context.Background())
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != 3 {
				t.Fatalf("Wait: %v, want exit status 3", err)
			}
			select {
			case <-tree.gone:
			default:
				t.Fatal("Wait returned before the reap, with exec's Wait still to run")
			}
			if cmd.Stdout != nil && out.String() != "all of it" {
				t.Fatalf("output when Wait returned: %q", out.String())
			}
		})
	}
}

// fdOpen reports whether f's descriptor is open in the kernel, not only
// in os's bookkeeping.
func fdOpen(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { _, ferr = unix.FcntlInt(fd, unix.F_GETFD, 0) }); err != nil {
		return false
	}
	return ferr == nil
}
