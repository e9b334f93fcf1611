//go:build unix

package supervisor

import (
	"bytes"
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
	c.begin()
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

// TestGatewayOutputFlood runs real gateways (a shell) that flood their
// output, text through the rate limit and random binary without one: every
// line is logged or counted, the count is logged once the gateway's output
// ends, and the binary comes back byte for byte from the log.
func TestGatewayOutputFlood(t *testing.T) {
	dir := t.TempDir()
	data := append(randomBytes(3, 256<<10, true), "\r\n\xff\r"...)
	// What the lines give back: CRLF ends a line as LF does.
	crlf := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	bin := filepath.Join(dir, "binary")
	if err := os.WriteFile(bin, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		script string
		burst  int
		logged int     // lines of gateway output logged
		report []int64 // the suppression line's lines and bytes; nil: none
		want   []byte  // the output the logged lines give back, joined by newlines
	}{
		// "line\n" 50 000 times: 1000 logged, 49 000 lines of 5 bytes counted.
		{"text flood limited", "yes line | head -n 50000", 1000, 1000, []int64{49000, 245000}, nil},
		{"text flood on both streams", "yes out | head -n 3000 & yes err | head -n 3000 >&2; wait", 1000, 1000, []int64{5000, 20000}, nil},
		// The last line has no newline: it is counted without one.
		{"unterminated last line", "yes line | head -n 10; printf tail", 10, 10, []int64{1, 4}, nil},
		{"binary unlimited", `cat "$1"`, 0, bytes.Count(crlf, []byte{'\n'}) + 1, nil, crlf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			core := zapcore.NewCore(logFormats[0].enc(), zapcore.Lock(zapcore.AddSync(&out)), zapcore.InfoLevel)
			cfg := &Config{Command: []string{"/bin/sh", "-c", c.script, "sh", bin}, OutputBurst: c.burst, OutputInterval: time.Hour}
			ch, err := startChild(cfg, procstate.Identity{PID: os.Getpid()}, zap.New(core), SystemClock{})
			if err != nil {
				t.Fatal(err)
			}
			ch.begin()
			if e := ch.wait(context.Background()); e.Code != 0 {
				t.Fatalf("exit %+v", e)
			}
			for _, d := range ch.drained {
				<-d
			}
			var lines [][]byte
			var reports []map[string]any
			for _, e := range lineFields(t, out.String()) {
				switch {
				case e["msg"] == "gateway output":
					lines = append(lines, lineBytes(t, e))
				case strings.HasPrefix(e["msg"].(string), "suppressed "):
					reports = append(reports, e)
				}
			}
			if len(lines) != c.logged {
				t.Errorf("%d lines logged, want %d", len(lines), c.logged)
			}
			switch {
			case c.report == nil && len(reports) > 0:
				t.Errorf("suppressed with no limit: %v", reports)
			case c.report != nil && len(reports) != 1:
				t.Errorf("%d suppression lines, want 1: %v", len(reports), reports)
			case c.report != nil && (reports[0]["lines"] != float64(c.report[0]) || reports[0]["bytes"] != float64(c.report[1])):
				t.Errorf("suppression line %v, want %d lines, %d bytes", reports[0], c.report[0], c.report[1])
			}
			if c.want != nil {
				if got := bytes.Join(lines, []byte{'\n'}); !bytes.Equal(got, c.want) {
					t.Errorf("the log gives back %d bytes that differ from the %d the gateway wrote", len(got), len(c.want))
				}
			}
		})
	}
}

// A gateway started on pipes made beforehand writes through them: both
// streams are logged, and the exit is seen, so our write ends were closed
// at the start (a write end we kept would hold the EOF away).
func TestStartChildOnPreparedPipes(t *testing.T) {
	pipes, err := newOutputPipes()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Command: []string{"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"}, out: pipes}
	core, logs := observer.New(zapcore.InfoLevel)
	c, err := startChild(cfg, procstate.Identity{PID: os.Getpid()}, zap.New(core), SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	c.begin()
	if e := c.wait(context.Background()); e.Code != 0 {
		t.Fatalf("exit = %+v, want 0", e)
	}
	got := map[string]string{}
	for _, l := range logs.FilterMessage("gateway output").All() {
		m := l.ContextMap()
		got[m["stream"].(string)] = m["line"].(string)
	}
	if got["stdout"] != "to-stdout" || got["stderr"] != "to-stderr" {
		t.Fatalf("logged %v, want each line on its own stream", got)
	}
	for i, w := range pipes.w {
		if _, err := w.Write([]byte("x")); err == nil {
			t.Errorf("write end %d is still open after the start", i)
		}
	}
}
