package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// runner is a gateway process under the supervisor's care: one it started,
// or one a previous supervisor left behind.
type runner interface {
	// Terminate asks the gateway to stop (after the planned-stop marker).
	Terminate() error
	// Kill ends the gateway's whole tree.
	Kill() error
	// wait blocks until the gateway is gone and reports how it ended.
	wait(ctx context.Context) Exit
}

// started is a child the supervisor started, held by its process tree
// handle: its exit comes from wait(2), never from a pid lookup.
type started struct {
	killed  atomic.Bool
	tree    *platform.Tree
	begun   time.Time
	clock   Clock
	drained []chan struct{} // one per output pipe, closed once all of it is logged
}

// EnvSupervisor names, in every gateway's environment, the supervisor that
// started it, as "<pid>:<start time>": a successor recognises by it a gateway
// whose supervisor was killed before it could record the gateway's pid.
const EnvSupervisor = "HERMES_SUPERVISOR"

func supervisorTag(self procstate.Identity) string {
	st := ""
	if self.StartTime != nil {
		st = strconv.FormatInt(*self.StartTime, 10)
	}
	return strconv.Itoa(self.PID) + ":" + st
}

// parseSupervisorTag reads EnvSupervisor back; ok is false unless both the
// pid and the start time are there, since a pid alone proves nothing.
func parseSupervisorTag(v string) (id procstate.Identity, ok bool) {
	p, st, found := strings.Cut(v, ":")
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseInt(st, 10, 64)
	if !found || err1 != nil || err2 != nil || pid <= 0 {
		return id, false
	}
	return procstate.Identity{PID: pid, StartTime: &start}, true
}

func startChild(cfg *Config, self procstate.Identity, log *zap.Logger, clock Clock) (*started, error) {
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Env = append(cmd.Env, EnvSupervisor+"="+supervisorTag(self))
	// Pipes of our own rather than writers for exec to copy from: then
	// Wait returns when the gateway exits, not when every holder of its
	// output closes it. A helper that left the tree (setsid) and keeps
	// stdout open would otherwise delay every exit by a WaitDelay and turn
	// the gateway's real exit into "WaitDelay expired".
	var readEnds, writeEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(readEnds)
			closeAll(writeEnds)
			return nil, fmt.Errorf("create the gateway's output pipe: %w", err)
		}
		readEnds, writeEnds = append(readEnds, r), append(writeEnds, w)
	}
	cmd.Stdout, cmd.Stderr = writeEnds[0], writeEnds[1]
	tree, err := platform.StartTree(cmd)
	closeAll(writeEnds) // the gateway holds them now; ours would keep EOF away
	if err != nil {
		closeAll(readEnds)
		return nil, err
	}
	c := &started{tree: tree, begun: clock.Now(), clock: clock}
	for i, stream := range []string{"stdout", "stderr"} {
		done := make(chan struct{})
		c.drained = append(c.drained, done)
		go (&lineLogger{log: log, stream: stream}).readFrom(readEnds[i], done)
	}
	return c, nil
}

// outputDrain bounds how long the exit waits for the rest of the gateway's
// output: what it wrote before exiting is read by then unless a descendant
// holds the pipe open, and the reader logs that later anyway.
const outputDrain = 250 * time.Millisecond

func (c *started) Terminate() error { return c.tree.Terminate() }

// Kill ends the tree and remembers it did: on Windows the exit code of a
// terminated process says nothing of how it ended.
func (c *started) Kill() error {
	c.killed.Store(true)
	return c.tree.Kill()
}

func (c *started) wait(context.Context) Exit {
	err := c.tree.Wait()
	drain := time.NewTimer(outputDrain)
	defer drain.Stop()
drained:
	for _, eof := range c.drained {
		select {
		case <-eof:
		case <-drain.C:
			break drained
		}
	}
	now := c.clock.Now()
	e := Exit{At: now, Uptime: now.Sub(c.begun), Code: -1}
	var ee *exec.ExitError
	switch {
	case err == nil:
		e.Code = 0
	case errors.As(err, &ee):
		e.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		} else if c.killed.Load() {
			e.Signal = "killed"
		}
	default:
		e.StartError = err.Error()
	}
	return e
}

// orphan is a gateway a previous supervisor started and then lost (it was
// SIGKILLed). We are not its parent, so its exit can only be observed by
// identity; every signal is sent only after its identity is re-checked.
type orphan struct {
	id     procstate.Identity
	prober *procstate.Prober
	log    *zap.Logger
	clock  Clock
	begun  time.Time
}

func (o *orphan) same() bool {
	return o.prober.Judge(context.Background(), o.id, o.matches).Verdict == procstate.Alive
}

// matches accepts exactly the command line we recorded when we started it.
func (o *orphan) matches(argv []string) bool {
	if len(argv) != len(o.id.Argv) {
		return false
	}
	for i := range argv {
		if argv[i] != o.id.Argv[i] {
			return false
		}
	}
	return true
}

func (o *orphan) Terminate() error {
	sig, ok := platform.TerminateSignal()
	if !ok || !o.same() {
		return nil // Windows: the planned-stop marker is the request.
	}
	p, err := os.FindProcess(o.id.PID)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Signal(sig)
}

func (o *orphan) Kill() error {
	if !o.same() {
		return nil
	}
	// Our gateways lead their own process group, so its helpers go too.
	if err := platform.KillGroup(o.id.PID); err != nil {
		return fmt.Errorf("kill orphaned gateway %s: %w", o.id, err)
	}
	return nil
}

func (o *orphan) wait(ctx context.Context) Exit {
	// Polling is confined to this rare path: the supervisor restarted
	// while its gateway kept running.
	if o.prober.WaitGone(ctx, o.id, o.matches, 50*time.Millisecond) == nil {
		o.killLeftovers(ctx)
	}
	now := o.clock.Now()
	return Exit{Code: -1, Signal: "unknown (not our child)", At: now, Uptime: now.Sub(o.begun)}
}

// killLeftovers kills what is left of the exited orphan's process group, as
// Tree.Wait does for our own children: no helper outlives its gateway.
// While the orphan's zombie lingers (init has not reaped it yet, or never
// will, as in a container whose pid 1 does not reap), the zombie holds the
// group id, so the group is surely its own. Once reaped, the group id is
// ours only while nobody has taken the pid again, which KillLeftovers checks.
func (o *orphan) killLeftovers(ctx context.Context) {
	obs := o.prober.Judge(ctx, o.id, o.matches)
	var err error
	switch {
	case obs.Verdict == procstate.Dead:
		err = platform.KillLeftovers(o.id.PID)
	case obs.Verdict == procstate.Zombie && o.id.StartTime != nil && obs.Live.StartTime != nil && *obs.Live.StartTime == *o.id.StartTime:
		err = platform.KillGroup(o.id.PID)
	}
	if err != nil {
		o.log.Warn("helpers of the old gateway may still run", zap.Int("pid", o.id.PID), zap.Error(err))
	}
}

// maxLogLine bounds one logged line of gateway output.
const maxLogLine = 16 << 10

// lineLogger turns the gateway's output into one log entry per line.
type lineLogger struct {
	log    *zap.Logger
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			if len(l.buf) > maxLogLine {
				l.emit()
			}
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLogger) emit() {
	line := bytes.TrimRight(l.buf, "\r")
	if len(line) > maxLogLine {
		line = line[:maxLogLine]
	}
	l.log.Info("gateway output", zap.String("stream", l.stream), zap.ByteString("line", line))
	l.buf = l.buf[:0]
}

// readFrom logs what r yields until EOF (every writer closed it: the
// gateway and whatever it left holding its output), then closes r and
// done.
func (l *lineLogger) readFrom(r *os.File, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = l.Write(buf[:n])
		}
		if err != nil {
			l.flush()
			return
		}
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit()
	}
}
