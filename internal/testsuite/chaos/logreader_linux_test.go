package chaos

import (
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"
)

// TestLogReaderGone runs the supervisor with its log going into a pipe
// whose reader then dies, as when `run 2>&1 | logger` loses its logger.
// Writing its next log line must not kill the supervisor (SIGPIPE): the
// gateway keeps being supervised, logs or not.
func TestLogReaderGone(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		tried++
		h := newHome(t, "")
		cmd := h.command("run", "--demo")
		r, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
		st := h.waitHealthy(t, p, 0)
		r.Close() // the log reader is gone
		// The kill and the restart are logged: writes to a broken pipe.
		// A supervisor dying of them fails waitHealthy at once.
		_ = syscall.Kill(st.Child.PID, syscall.SIGKILL)
		h.waitHealthy(t, p, st.Child.PID)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := p.exited(t, 30*time.Second); code != 0 {
			t.Fatalf("supervisor exited %d after SIGTERM", code)
		}
		survived++
	}
	tally.add(count{"9. the log reader dies", tried, survived,
		"the supervisor's stderr is a pipe whose reader is gone: it keeps supervising (a kill and a restart are logged into the broken pipe), and stops cleanly"})
}
