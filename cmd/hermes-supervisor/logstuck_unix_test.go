//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/fullpipe"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// TestRunWithStuckLog runs the supervisor with its stderr a full pipe
// that nobody reads, as a terminal paused with Ctrl-S, a `run 2>&1 | less`
// left at a prompt or a wedged log collector leave it. Every log line then
// blocks in write(2): the supervisor used to block with it, on its state
// machine, and left a killed gateway dead (and its control endpoint
// silent) until someone read its log. It must start the gateway, restart
// it after a SIGKILL, and once the reader comes back, the log must hold
// what was logged meanwhile, in order.
func TestRunWithStuckLog(t *testing.T) {
	exe := testdir.OpenCopy(t, "hermes-supervisor")
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	r, w := fullpipe.New(t)
	cmd := exec.Command(exe, "--home", home, "--lock-dir", filepath.Join(dir, "locks"), "run", "--demo")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		r.Close() // a supervisor blocked in write(2) dies of SIGKILL only once it returns
		<-done
	})

	first := waitReady(t, home, done, 0)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := waitReady(t, home, done, first)
	t.Logf("gateway %d killed, %d started, with nobody reading the log", first, second)

	// The reader comes back (Ctrl-Q): what was logged meanwhile arrives.
	var log syncbuf.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&log, r); close(copied) }()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("supervisor after SIGTERM: %v\n%s", waitErr, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("supervisor still runs 30 s after SIGTERM\n%s", log.String())
	}
	<-copied
	out := []byte(log.String())
	at := 0
	for _, want := range []string{"supervising", "gateway exited", "killed by SIGKILL", "stopped"} {
		i := bytes.Index(out[at:], []byte(want))
		if i < 0 {
			t.Fatalf("the log lacks %q after byte %d, or has it out of order:\n%s", want, at, out)
		}
		at += i
	}
}

// waitReady polls the supervisor of home over its control endpoint until
// it runs a ready gateway other than not, and returns its pid; it fails
// the test after 30 s, or when the supervisor exits.
func waitReady(t *testing.T, home string, exited <-chan struct{}, not int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		resp, err := supervisor.Call(ctx, ctlsock.Address(home), "status")
		cancel()
		if st := resp.Status; err == nil && st != nil {
			if st.State == supervisor.Running && st.Child != nil && st.Child.Ready && st.Child.PID != not {
				return st.Child.PID
			}
			last = string(st.State)
		} else if err != nil {
			last = err.Error()
		}
		select {
		case <-exited:
			t.Fatalf("supervisor exited while waiting for a ready gateway")
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no ready gateway other than %d within 30 s; last: %s", not, last)
	return 0
}
