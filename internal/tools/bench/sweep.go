//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/sweepbin"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

type sweepResult struct {
	n       int
	rounds  int
	sum     summary       // whole sweep
	perFile time.Duration // median / n
	scan    summary       // dry run (judge only) of the same files
	swept   int           // per round
	kept    int

	// marginal is the slope of the median from the previous n: the cost
	// of one more file; marginalLo and marginalHi are its 95% bootstrap
	// interval (slopeInterval).
	marginal, marginalLo, marginalHi time.Duration
	// floor is the bare system calls of the same sweep (floorRound), a
	// round after each round of the sweep; floorMarginal is its slope.
	floor         summary
	floorMarginal time.Duration
}

// owners are the processes the stale files name.
type owners struct {
	live   []procstate.Identity // real demo gateways: files naming them are kept
	others []procstate.Identity // live non-gateways: a file naming one with another start time is a reused pid
	dead   []int                // pids no process has
	stop   func()
}

func startOwners(ctx context.Context, c config, child string, prober *procstate.Prober) (*owners, error) {
	o := &owners{}
	var cmds []*exec.Cmd
	o.stop = func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	tmp, err := os.MkdirTemp("", "hsbench-owners")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	start := func(pidFile string, name string, args ...string) (procstate.Identity, error) {
		cmd := exec.Command(name, args...)
		if err := cmd.Start(); err != nil {
			return procstate.Identity{}, err
		}
		cmds = append(cmds, cmd)
		read := readBarePID
		if filepath.Base(pidFile) == "gateway.pid" {
			read = readRecordPID
		}
		if _, err := waitPID(ctx, pidFile, read, 0, 15*time.Second); err != nil {
			return procstate.Identity{}, err
		}
		return prober.Inspect(ctx, cmd.Process.Pid)
	}
	for i := range 5 {
		home := filepath.Join(tmp, "gw"+strconv.Itoa(i))
		id, err := start(filepath.Join(home, "gateway.pid"), c.supervisor, "demo-gateway",
			"-home", home, "-lock-dir", filepath.Join(home, "locks"))
		if err != nil {
			o.stop()
			return nil, fmt.Errorf("start a live demo gateway: %w", err)
		}
		o.live = append(o.live, id)
	}
	for i := range 20 {
		id, err := start(filepath.Join(tmp, "c"+strconv.Itoa(i)), child, filepath.Join(tmp, "c"+strconv.Itoa(i)))
		if err != nil {
			o.stop()
			return nil, err
		}
		o.others = append(o.others, id)
	}
	max := 4194304
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(string(b[:len(b)-1])); err == nil {
			max = v
		}
	}
	for pid := max - 1; pid > max/2 && len(o.dead) < 10000; pid-- {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			o.dead = append(o.dead, pid)
		}
	}
	return o, nil
}

// layout writes n scoped locks, a third each naming a dead pid, a reused
// pid (a live process with another start time) and a live gateway. Dead and
// reused files each name a distinct identity, so none is judged from cache.
func (o *owners) layout(dir string, n int, rnd *rand.Rand) (stale int, err error) {
	for i := range n {
		var id procstate.Identity
		switch i % 3 {
		case 0:
			id = procstate.Identity{PID: o.dead[(i/3)%len(o.dead)], StartTime: ptr(1000 + int64(i)),
				Argv: []string{"hermes", "gateway", "run"}}
			stale++
		case 1:
			id = o.others[rnd.IntN(len(o.others))]
			id.StartTime = ptr(*id.StartTime + 1000 + int64(i))
			id.Argv = []string{"hermes", "gateway", "run"}
			stale++
		case 2: // layoutKeeps
			id = o.live[rnd.IntN(len(o.live))]
		}
		rec := lockstore.NewRecord(id, "/home/bench/.hermes")
		rec.Scope = benchScope
		token := benchToken(i)
		rec.IdentityHash = lockstore.IdentityHash(token)
		if err := lockstore.WriteExclusive(layoutPath(dir, i), rec); err != nil {
			return 0, err
		}
	}
	return stale, nil
}

// benchScope is the scope of every lock the layout writes.
const benchScope = "telegram-bot-token"

func benchToken(i int) string { return "token-" + strconv.Itoa(i) }

// layoutPath is the path of the layout's i-th file in dir.
func layoutPath(dir string, i int) string {
	return lockstore.Layout{LockDir: dir}.ScopedLock(benchScope, benchToken(i))
}

// layoutKeeps reports whether the layout's i-th file names a live gateway,
// which a sweep keeps.
func layoutKeeps(i int) bool { return i%3 == 2 }

func sweepCost(ctx context.Context, c config, child string) ([]sweepResult, error) {
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	o, err := startOwners(ctx, c, child, prober)
	if err != nil {
		return nil, err
	}
	defer o.stop()
	rnd := rand.New(rand.NewPCG(1, 2))
	out := make([]sweepResult, len(c.sweepSizes))
	sweeps := make([][]time.Duration, len(c.sweepSizes))
	scans := make([][]time.Duration, len(c.sweepSizes))
	floors := make([][]time.Duration, len(c.sweepSizes))
	for i, n := range c.sweepSizes {
		out[i] = sweepResult{n: n, rounds: max(5, min(30, 30000/n))}
	}
	// Each size's rounds are spread over the whole section (see
	// sweepOrder): the slope between neighbouring sizes is a difference
	// of medians, and a slow spell of the host that fell on one size's
	// rounds alone moved it by a quarter between two runs.
	for _, i := range sweepOrder(out) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res := &out[i]
		scan, sweep, err := o.sweepRound(ctx, prober, res, rnd)
		if err != nil {
			return nil, err
		}
		scans[i], sweeps[i] = append(scans[i], scan), append(sweeps[i], sweep)
		floor, err := o.floorRound(ctx, res.n, rnd)
		if err != nil {
			return nil, err
		}
		floors[i] = append(floors[i], floor)
	}
	for i := range out {
		res := &out[i]
		res.sum, res.scan, res.floor = summarize(sweeps[i]), summarize(scans[i]), summarize(floors[i])
		res.perFile = res.sum.Med / time.Duration(res.n)
		if i > 0 {
			prev := out[i-1]
			res.marginal = (res.sum.Med - prev.sum.Med) / time.Duration(res.n-prev.n)
			res.floorMarginal = (res.floor.Med - prev.floor.Med) / time.Duration(res.n-prev.n)
			res.marginalLo, res.marginalHi = slopeInterval(sweeps[i], sweeps[i-1], res.n-prev.n, 10000)
		}
	}
	return out, nil
}

// sweepOrder returns which size each round is of (an index into rs), in
// the order they run: the sizes with most rounds set the steps, and a
// size with fewer rounds runs one at evenly spaced steps among them, so
// that every size's rounds span the section rather than follow each other.
func sweepOrder(rs []sweepResult) []int {
	steps := 0
	for _, r := range rs {
		steps = max(steps, r.rounds)
	}
	var order []int
	for step := range steps {
		for i, r := range rs {
			// At the first step, and then each time step*rounds/steps
			// passes a whole number: rounds times in all.
			if step == 0 || step*r.rounds/steps > (step-1)*r.rounds/steps {
				order = append(order, i)
			}
		}
	}
	return order
}

// sweepRound lays out res.n files in a fresh home and lock dir, times a
// Scan and then a Sweep of them, and checks what the sweep did.
func (o *owners) sweepRound(ctx context.Context, prober *procstate.Prober, res *sweepResult, rnd *rand.Rand) (scan, sweep time.Duration, err error) {
	n := res.n
	root, err := os.MkdirTemp("", "hsbench-sweep")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(root)
	l := lockstore.Layout{Home: filepath.Join(root, "home"), LockDir: filepath.Join(root, "locks")}
	for _, d := range []string{l.Home, l.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, 0, err
		}
	}
	stale, err := o.layout(l.LockDir, n, rnd)
	if err != nil {
		return 0, 0, err
	}
	store := lockstore.New(l, prober, zap.NewNop(), time.Now)
	t0 := time.Now()
	if _, err := store.Scan(ctx); err != nil {
		return 0, 0, err
	}
	scan = time.Since(t0)
	// SweepEach, not Sweep: the sweep itself, its entries counted as they
	// come; Sweep's sorted list of every entry is the `sweep` command's
	// report, which a person reads, not a cost of sweeping.
	swept, kept := 0, 0
	t0 = time.Now()
	_, err = store.SweepEach(ctx, false, func(es []lockstore.Entry) {
		for _, e := range es {
			switch e.Action {
			case lockstore.ActionSwept:
				swept++
			case lockstore.ActionKeep:
				kept++
			}
		}
	})
	sweep = time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	left, _ := os.ReadDir(l.LockDir)
	bin, berr := sweepbin.Files(l.SweepBin())
	// A benchmark of a wrong sweep is worthless: check it. The lock dir
	// keeps the live files and the sweep's bin, which holds nothing but
	// its goroutines' empty bins.
	if swept != stale || kept != n-stale || len(left) != n-stale+1 || berr != nil || len(bin) != 0 {
		return 0, 0, fmt.Errorf("sweep of %d files: swept %d kept %d, %d names left in the lock dir and %d in the bin (%v), want %d/%d/%d/0",
			n, swept, kept, len(left), len(bin), berr, stale, n-stale, n-stale+1)
	}
	res.swept, res.kept = swept, kept
	return scan, sweep, nil
}

func ptr(v int64) *int64 { return &v }

// slopeInterval formats the 95% bootstrap interval of s's slope per added
// file, or nothing when there is none.
func (s sweepResult) slopeInterval() string {
	if s.marginalLo == 0 && s.marginalHi == 0 {
		return ""
	}
	return fmt.Sprintf(" (95%% bootstrap interval %s–%s)", s.marginalLo.Round(100*time.Nanosecond), s.marginalHi.Round(100*time.Nanosecond))
}
