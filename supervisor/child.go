package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
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
	// survivors lists what is still alive of a killed tree.
	survivors() []proctree.Unkilled
}

// started is a child the supervisor started, held by its process tree
// handle: its exit comes from wait(2), never from a pid lookup.
type started struct {
	killed   atomic.Bool
	tree     *proctree.Tree
	begun    time.Time
	clock    Clock
	log      *zap.Logger
	evidence string          // why the cgroups under which the tree runs are ours
	drained  []chan struct{} // one per output pipe, closed once all of it is logged
	readEnds []*os.File      // the pipes' read ends, until begin hands them to their readers
	out      *gatewayOutput
}

// EnvSupervisor names, in every gateway's environment, the supervisor that
// started it, as "<pid>:<start time>", for people reading ps. It proves
// nothing (anyone can set it, and every descendant inherits it); EnvNonce
// is what a successor checks.
const EnvSupervisor = "HERMES_SUPERVISOR"

func supervisorTag(self procstate.Identity) string {
	st := ""
	if self.StartTime != nil {
		st = strconv.FormatInt(*self.StartTime, 10)
	}
	return strconv.Itoa(self.PID) + ":" + st
}

// spawned is a gateway the supervisor just started.
type spawned interface {
	runner
	pid() int
	startedAt() time.Time
	// cgroup names the gateway's cgroup, "" when it has none.
	cgroup() string
	// begin starts reading the gateway's output. Until then the pipes
	// hold it: the readers' goroutines are left out of the gateway's
	// first milliseconds (see Supervisor.settle).
	begin()
}

var _ spawned = (*started)(nil)

// spawnChild starts the gateway: Supervisor.spawn, which tests replace.
func spawnChild(cfg *Config, self procstate.Identity, log *zap.Logger, clock Clock) (spawned, error) {
	st, err := startChild(cfg, self, log, clock)
	if err != nil {
		return nil, err // not a nil *started: a non-nil interface
	}
	return st, nil
}

func startChild(cfg *Config, self procstate.Identity, log *zap.Logger, clock Clock) (*started, error) {
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = childEnv(os.Environ(), cfg.Env, EnvSupervisor+"="+supervisorTag(self))
	cmd.Dir = gatewayDir(cfg.Layout.Home)
	if cfg.stdin != nil {
		cmd.Stdin = cfg.stdin
	}
	pipes := cfg.out
	if pipes == nil {
		var err error
		if pipes, err = newOutputPipes(); err != nil {
			return nil, err
		}
	}
	readEnds := pipes.r[:]
	cmd.Stdout, cmd.Stderr = pipes.w[0], pipes.w[1]
	tree, err := proctree.Start(cmd, cfg.Cgroups, cfg.Reaper)
	closeAll(pipes.w[:]) // the gateway holds them now; ours would keep EOF away
	if err != nil {
		closeAll(readEnds)
		return nil, err
	}
	c := &started{tree: tree, begun: clock.Now(), clock: clock, log: log}
	if cfg.Cgroups != nil {
		c.evidence = cfg.Cgroups.Evidence()
		switch where, err := tree.Cgroup(); {
		case where == "":
			log.Warn("the gateway runs without a cgroup of its own: a helper that leaves its process group will outlive it",
				zap.Int("pid", tree.Pid()), zap.Error(err))
		case err != nil:
			log.Warn("the gateway was moved into its cgroup only after it started: what it started before that is held by its process group alone",
				zap.Int("pid", tree.Pid()), zap.String("cgroup", where), zap.Error(err))
		default:
			log.Debug("the gateway runs in a cgroup of its own", zap.Int("pid", tree.Pid()), zap.String("cgroup", where))
		}
	}
	limit := cfg.outLimit
	if limit == nil {
		limit = newOutputLimit(log, clock, cfg.OutputBurst, cfg.OutputInterval)
	}
	c.out = newGatewayOutput(log, limit, len(readEnds))
	c.readEnds = readEnds
	for range readEnds {
		c.drained = append(c.drained, make(chan struct{}))
	}
	return c, nil
}

func (c *started) begin() {
	if c.readEnds == nil {
		return // begun
	}
	for i, stream := range []string{"stdout", "stderr"} {
		go c.out.readFrom(c.out.stream(stream), c.readEnds[i], c.drained[i])
	}
	c.readEnds = nil
}

// outputPipes are a gateway's stdout and stderr: pipes of our own rather
// than writers for exec to copy from, so that Wait returns when the
// gateway exits, not when every holder of its output closes it. A helper
// that left the tree (setsid) and keeps stdout open would otherwise delay
// every exit by a WaitDelay and turn the gateway's real exit into
// "WaitDelay expired". r are the read ends, w the write ends, each
// stdout then stderr.
type outputPipes struct {
	r, w [2]*os.File
}

func newOutputPipes() (*outputPipes, error) {
	p := &outputPipes{}
	for i := range p.r {
		var err error
		if p.r[i], p.w[i], err = outputPipe(); err != nil {
			p.close()
			return nil, fmt.Errorf("create the gateway's output pipe: %w", err)
		}
	}
	return p, nil
}

// close closes the ends not yet closed; a nil p has none.
func (p *outputPipes) close() {
	if p == nil {
		return
	}
	closeAll(p.r[:])
	closeAll(p.w[:])
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// outputDrain bounds how long the exit waits for the rest of the gateway's
// output, which the reader logs later anyway: a descendant that holds the
// pipe open, or a backlog that takes longer to log (on a slow host, the
// last of 100 000 lines written just before the exit), must not hold the
// restart back. Such lines come after the exit's in the log.
const outputDrain = 250 * time.Millisecond

func (c *started) Terminate() error { return c.tree.Terminate() }

// Kill ends the tree and remembers it did: on Windows the exit code of a
// terminated process says nothing of how it ended.
func (c *started) Kill() error {
	c.killed.Store(true)
	return c.tree.Kill()
}

func (c *started) survivors() []proctree.Unkilled { return c.tree.Survivors() }

func (c *started) pid() int             { return c.tree.Pid() }
func (c *started) startedAt() time.Time { return c.begun }

func (c *started) cgroup() string {
	where, _ := c.tree.Cgroup()
	return where
}

func (c *started) wait(ctx context.Context) Exit {
	left, err := c.tree.Wait(ctx)
	reaped := time.Now()
	if len(left.PIDs) > 0 {
		c.log.Warn("killed what the exited gateway left in its cgroup", zap.Int("pid", c.tree.Pid()),
			zap.Ints("pids", left.PIDs), zap.String("cgroup", left.Cgroup),
			zap.String("evidence", "members of the cgroup this supervisor created for this gateway, inside the cgroup delegated to it ("+c.evidence+")"))
	}
	if len(left.Adopted) > 0 {
		c.log.Warn("killed what the exited gateway left outside its process group", zap.Int("pid", c.tree.Pid()),
			zap.Ints("pids", left.Adopted),
			zap.String("evidence", "descendants by live parent links, or orphans re-parented to this supervisor, their subreaper"))
	}
	if left.Err != nil {
		c.log.Warn("could not empty or remove the gateway's cgroup", zap.String("cgroup", left.Cgroup), zap.Error(left.Err))
	}
	for _, u := range left.Unkilled {
		c.log.Error("could not kill a process of the gateway's tree", zap.Int("pid", u.PID), zap.String("name", u.Name),
			zap.String("why", u.Why))
	}
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
	drainedAt := time.Now()
	now := c.clock.Now()
	e := Exit{At: now, Uptime: now.Sub(c.begun), Code: -1}
	var ee *proctree.ExitError
	switch {
	case err == nil:
		e.Code = 0
	case errors.As(err, &ee):
		e.Code = ee.Code
		if ee.Signal != 0 {
			e.Signal = signals.Name(ee.Signal)
		} else if c.killed.Load() {
			e.Signal = killedByStopTimeout
		}
	default:
		e.StartError = err.Error()
	}
	e.Unkilled = left.Unkilled
	e.said = c.out.tail()
	e.seen, e.reaped, e.drained = left.Exited, reaped, drainedAt
	return e
}

// orphan is a gateway a previous supervisor started and then lost (it was
// SIGKILLed). We are not its parent, so its exit can only be observed by
// identity, and every signal is sent only after it is proven again: its
// nonce, this home, and exactly the recorded start time and command line.
type orphan struct {
	id      procstate.Identity
	proof   proof
	prober  *procstate.Prober
	log     *zap.Logger
	clock   Clock
	begun   time.Time
	helpers func(ctx context.Context, pgid int)

	abandonOnce sync.Once
	abandoned   chan struct{}
}

func newOrphan(id procstate.Identity, p proof, log *zap.Logger, clock Clock, begun time.Time, helpers func(context.Context, int)) *orphan {
	return &orphan{id: id, proof: p, prober: p.prober, log: log, clock: clock, begun: begun, helpers: helpers, abandoned: make(chan struct{})}
}

// matches accepts exactly the command line we recorded when we started it.
func (o *orphan) matches(argv []string) bool { return slices.Equal(argv, o.id.Argv) }

// abandon stops waiting for a gateway we may not or cannot stop: the
// supervisor must not sit in "stopping" forever, ignoring stop.
func (o *orphan) abandon(why error) {
	o.abandonOnce.Do(func() {
		o.log.Warn("leaving the gateway of a previous supervisor alone", zap.Int("pid", o.id.PID), zap.Error(why))
		close(o.abandoned)
	})
}

// unproven handles a failed proof: a gateway that has just exited (dead,
// or a zombie whose environment is gone) is left to wait, which then
// clears its helpers; a live process that is no longer provably ours is
// abandoned.
func (o *orphan) unproven(err error) {
	if o.prober.Liveness(context.Background(), o.id, o.matches).Verdict.Gone() {
		return
	}
	o.abandon(err)
}

func (o *orphan) isAbandoned() bool {
	select {
	case <-o.abandoned:
		return true
	default:
		return false
	}
}

func (o *orphan) Terminate() error {
	sig, ok := signals.Terminate()
	if !ok {
		return nil // Windows: the planned-stop marker is the request.
	}
	// Found before it is proven: on Linux the handle is a pidfd, so the
	// signal reaches the process proven, even if the pid is reused after.
	p, err := os.FindProcess(o.id.PID)
	if err != nil {
		return nil // gone already
	}
	defer p.Release()
	if _, err := o.proof.checkRecorded(context.Background(), o.id); err != nil {
		o.unproven(err)
		return nil
	}
	o.log.Info("asking the gateway of a previous supervisor to stop", zap.Int("pid", o.id.PID),
		zap.Int64p("start_time", o.id.StartTime), zap.Strings("argv", o.id.Argv),
		zap.String("evidence", "nonce in its environment, HERMES_HOME, start time and command line as recorded"))
	if err := p.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (o *orphan) Kill() error {
	c, err := o.proof.checkRecorded(context.Background(), o.id)
	if err != nil {
		o.unproven(err)
		return nil
	}
	o.log.Warn("killing the gateway of a previous supervisor, with its process group", zap.Int("pid", o.id.PID),
		zap.Int("pgid", c.pgid), zap.Int64p("start_time", o.id.StartTime), zap.Strings("argv", o.id.Argv),
		zap.String("evidence", "nonce in its environment, HERMES_HOME, start time and command line as recorded"))
	if err := proctree.KillGroup(o.id.PID); err != nil {
		err = fmt.Errorf("kill orphaned gateway %s: %w", o.id, err)
		o.abandon(err)
		return err
	}
	return nil
}

// survivors: the previous supervisor's gateway, while it still runs.
func (o *orphan) survivors() []proctree.Unkilled {
	if o.prober.Liveness(context.Background(), o.id, o.matches).Verdict.Gone() {
		return nil
	}
	return []proctree.Unkilled{{PID: o.id.PID, Why: "the gateway of a previous supervisor still runs after its group was killed"}}
}

func (o *orphan) wait(ctx context.Context) Exit {
	// Polling is confined to this rare path: the supervisor restarted
	// while its gateway kept running.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan error, 1)
	go func() { gone <- o.prober.WaitGone(wctx, o.id, o.matches, 50*time.Millisecond) }()
	how := "exited; how is unknown, since it was not our child"
	select {
	case err := <-gone:
		if err == nil && o.helpers != nil {
			// No helper outlives its gateway: those still in its group
			// that carry its nonce go, one proven pid at a time.
			o.helpers(ctx, o.id.PID)
		}
	case <-o.abandoned:
		cancel()
		<-gone
		how = "left running: not provably ours, or it could not be stopped"
	}
	now := o.clock.Now()
	return Exit{Code: -1, Orphan: how, At: now, Uptime: now.Sub(o.begun)}
}

// killedByStopTimeout is the Exit.Signal of a gateway the supervisor
// killed where the exit status cannot say so (Windows' TerminateJobObject).
const killedByStopTimeout = "the supervisor after the stop timeout"
