//go:build unix

package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestHelperHoldingOutput starts a gateway that leaves a helper in a
// session of its own holding its stdout, then exits: the exit must read as
// the gateway's own (exec's WaitDelay turned a clean one into "WaitDelay
// expired"), come without waiting for the helper, and the gateway's last
// line must be logged.
func TestHelperHoldingOutput(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid(1) (util-linux) to start a helper outside the gateway's process group")
	}
	for _, code := range []int{0, 3} {
		t.Run(strconv.Itoa(code), func(t *testing.T) { helperHoldingOutput(t, code) })
	}
}

func helperHoldingOutput(t *testing.T, code int) {
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	t.Cleanup(func() { killHelper(t, pidFile) })
	// The gateway exits only once the helper is in its own session (it
	// says so through a fifo): before that, the group kill at the exit
	// would take the helper too.
	script := `mkfifo "$1.fifo" || exit 99
setsid sh -c 'echo $$ >"$0" && echo ok >"$0.fifo" && exec sleep 60' "$1" &
read ok <"$1.fifo"; echo last words; exit ` + strconv.Itoa(code) + "\n"
	cfg := &Config{Command: []string{"/bin/sh", "-c", script, "sh", pidFile}}
	core, logs := observer.New(zapcore.InfoLevel)
	c, err := startChild(cfg, procstate.Identity{PID: os.Getpid()}, zap.New(core), SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	e := c.wait(context.Background())
	if e.Code != code || e.StartError != "" || e.Signal != "" {
		t.Errorf("exit = %+v, want exit %d and nothing else", e, code)
	}
	// The helper sleeps a minute: waiting for it would take that long.
	if took := time.Since(begun); took > 20*time.Second {
		t.Errorf("the exit took %v: it waited for the helper", took)
	}
	var lines []string
	for _, l := range logs.FilterMessage("gateway output").All() {
		lines = append(lines, l.ContextMap()["line"].(string))
	}
	if !strings.Contains(strings.Join(lines, "\n"), "last words") {
		t.Errorf("the gateway's last line was not logged: %q", lines)
	}
}

// killHelper kills the helper, which wrote its pid before the gateway
// could exit.
func killHelper(t *testing.T, pidFile string) {
	data, err := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil {
		t.Errorf("no helper pid in %s: %v %v", pidFile, err, perr)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
