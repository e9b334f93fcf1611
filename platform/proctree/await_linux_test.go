package proctree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startSleeper starts the test binary as a process that sleeps until it is
// killed; the cleanup kills and reaps it.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

// awaitAsync runs AwaitExit on pid; pinned closes when it asks same, which
// answers ok.
func awaitAsync(ctx context.Context, pid int, ok bool) (pinned <-chan struct{}, done <-chan error) {
	p, d := make(chan struct{}), make(chan error, 1)
	go func() {
		d <- AwaitExit(ctx, pid, func() bool { close(p); return ok })
	}()
	return p, d
}

// AwaitExit pins the process (a pidfd) before it is proven, then follows
// that very process: its exit ends the wait, a cancelled wait leaves it
// running, and one that is not the proven process is left alone.
func TestAwaitExit(t *testing.T) {
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		t.Skipf("no pidfd_open on this kernel (%v): AwaitExit wraps ErrUnsupported here", err)
	} else {
		unix.Close(fd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("exit ends the wait", func(t *testing.T) {
		c := startSleeper(t)
		pinned, done := awaitAsync(ctx, c.Process.Pid, true)
		<-pinned
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("AwaitExit after the process was killed: %v", err)
		}
	})
	t.Run("a cancelled wait is not an exit", func(t *testing.T) {
		c := startSleeper(t)
		wctx, wcancel := context.WithCancel(ctx)
		pinned, done := awaitAsync(wctx, c.Process.Pid, true)
		<-pinned
		wcancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("AwaitExit of a live process, cancelled: %v; want context.Canceled", err)
		}
		if err := c.Process.Signal(unix.Signal(0)); err != nil {
			t.Fatalf("the process did not survive the wait: %v", err)
		}
	})
	t.Run("not the proven process", func(t *testing.T) {
		c := startSleeper(t)
		_, done := awaitAsync(ctx, c.Process.Pid, false)
		if err := <-done; !errors.Is(err, ErrNotSame) {
			t.Fatalf("AwaitExit when same says no: %v; want ErrNotSame", err)
		}
		if err := c.Process.Signal(unix.Signal(0)); err != nil {
			t.Fatalf("the process did not survive: %v", err)
		}
	})
	t.Run("gone already", func(t *testing.T) {
		c := startSleeper(t)
		pid := c.Process.Pid
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = c.Wait()
		asked := false
		if err := AwaitExit(ctx, pid, func() bool { asked = true; return true }); err != nil {
			t.Fatalf("AwaitExit of a reaped process: %v", err)
		}
		if asked {
			t.Error("a process already gone was proven: nothing was pinned to prove")
		}
	})
	t.Run("pid 1 and ourselves are refused", func(t *testing.T) {
		for _, pid := range []int{1, os.Getpid()} {
			if err := AwaitExit(ctx, pid, func() bool { return true }); !errors.Is(err, ErrRefused) {
				t.Errorf("AwaitExit(%d): %v; want ErrRefused", pid, err)
			}
		}
	})
}
