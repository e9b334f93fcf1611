//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type config struct {
	supervisor  string        // the hermes-supervisor binary
	out         string        // docs directory
	kills       int           // restart-latency samples per contender
	gap         time.Duration // healthy uptime before each kill
	idle        time.Duration // idle-cost window
	idleWindows int           // consecutive idle windows, of which the median counts
	scaleRuns   int           // quiet starts over 100 000 lock files, of which the median counts, and as many polled ones
	sweepSizes  []int
	powerRuns   int
	goBench     bool
	hangs       int      // hang-detection samples
	only        string   // run one part and print its section
	against     []string // other hermes-supervisor builds, for -only ab
}

func main() {
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case "floor":
			floor(os.Args[2:])
			return
		}
	}
	var c config
	flag.StringVar(&c.supervisor, "supervisor", "bin/hermes-supervisor", "hermes-supervisor binary to measure")
	flag.StringVar(&c.out, "out", "docs", "where benchmarks.md and the plots go")
	flag.IntVar(&c.kills, "kills", 60, "SIGKILLs per supervisor for restart latency (20 left the median ratio of two rows of the same code 0.07 apart)")
	flag.DurationVar(&c.gap, "gap", 1200*time.Millisecond, "uptime of the child before each SIGKILL (runsv and s6 delay restarts of a child that ran under 1 s)")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "how long to watch an idle supervisor, per window")
	flag.IntVar(&c.idleWindows, "idle-windows", 3, "idle windows in a row; the median counts, since one window samples the host as much as the supervisor")
	flag.IntVar(&c.scaleRuns, "scale-runs", 3, "quiet starts over 100 000 lock files, and as many with status asked every 5 ms; the median quiet sweep counts, since one sweep samples the host as much as the supervisor")
	flag.IntVar(&c.powerRuns, "power-runs", 10, "power-loss recoveries to time")
	flag.BoolVar(&c.goBench, "go-bench", true, "run the Go micro-benchmarks too")
	flag.IntVar(&c.hangs, "hangs", 10, "hangs to catch for hang detection")
	flag.StringVar(&c.only, "only", "", "run only this part (hang, flood; restart, phases, scale, sweep and ab are printed only), print its section and put it into benchmarks.md in -out, keeping the other sections")
	flag.Func("against", "with -only ab: other hermes-supervisor binaries or wrapper scripts, comma-separated, each measured against -supervisor and the floor, killed in turn", func(v string) error {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.against = append(c.against, b)
			}
		}
		return nil
	})
	flag.Parse()
	c.sweepSizes = []int{10, 100, 1000, 10000, 100000}
	var err error
	if c.supervisor, err = filepath.Abs(c.supervisor); err != nil {
		fail(err)
	}
	if _, err := os.Stat(c.supervisor); err != nil {
		fail(fmt.Errorf("%w: build it first (make build)", err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.only == "flood" {
		started := time.Now()
		f, err := floodCost(ctx, c)
		if err != nil {
			fail(err)
		}
		fmt.Print(f.markdown())
		path := filepath.Join(c.out, "benchmarks.md")
		if err := spliceFlood(path, f, started, os.Args[1:]); err != nil {
			fail(err)
		}
		fmt.Printf("wrote section 7 and its target into %s\n", path)
		return
	}
	if c.only == "ab" {
		if len(c.against) == 0 {
			fail(fmt.Errorf("-only ab needs -against, the other hermes-supervisor binaries"))
		}
		for i, b := range c.against {
			if c.against[i], err = filepath.Abs(b); err != nil {
				fail(err)
			}
			if _, err := os.Stat(c.against[i]); err != nil {
				fail(fmt.Errorf("-against: %w", err))
			}
		}
	}
	if c.only == "restart" || c.only == "phases" || c.only == "scale" || c.only == "sweep" || c.only == "ab" {
		// Printed, not spliced: these numbers belong beside the floor of
		// the same run, which only a full run writes.
		if err := printOnly(ctx, c); err != nil {
			fail(err)
		}
		return
	}
	if c.only == "hang" {
		started := time.Now()
		h, err := hangCost(ctx, c, c.hangs)
		if err != nil {
			fail(err)
		}
		fmt.Print(h.markdown())
		path := filepath.Join(c.out, "benchmarks.md")
		if err := spliceHang(path, h, started, os.Args[1:]); err != nil {
			fail(err)
		}
		fmt.Printf("wrote section 6 and its targets into %s\n", path)
		return
	}
	r, err := run(ctx, c)
	if err != nil {
		fail(err)
	}
	if err := r.write(c.out); err != nil {
		fail(err)
	}
	fmt.Printf("wrote %s\n", filepath.Join(c.out, "benchmarks.md"))
}

func printOnly(ctx context.Context, c config) error {
	r := &report{cfg: c, started: time.Now(), machine: describeMachine()}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "hsbench-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	child := filepath.Join(scratch, "child")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", child, "./internal/tools/bench/child").CombinedOutput(); err != nil {
		return fmt.Errorf("build the bench child (run from the module root): %w\n%s", err, out)
	}
	var b strings.Builder
	var st steal
	st.begin()
	switch c.only {
	case "restart":
		if r.restart, err = restartLatency(ctx, c, self, child); err != nil {
			return err
		}
		if r.breakdown, err = restartBreakdown(ctx, c, child); err != nil {
			return err
		}
		if r.phases, err = traceRestarts(ctx, c, self, child); err != nil {
			return err
		}
		r.restartSection(&b)
		r.breakdownSection(&b)
		r.phasesSection(&b)
	case "phases":
		if r.phases, err = traceRestarts(ctx, c, self, child); err != nil {
			return err
		}
		r.phasesSection(&b)
	case "scale":
		if r.scale, err = scaleCost(ctx, c, child); err != nil {
			return err
		}
		r.scaleSection(&b)
	case "sweep":
		if r.sweep, err = sweepCost(ctx, c, child); err != nil {
			return err
		}
		r.sweepSection(&b)
	case "ab":
		ls, err := abLatency(ctx, c, self, child)
		if err != nil {
			return err
		}
		abSection(&b, c, ls)
	}
	fmt.Print(b.String())
	st.end()
	fmt.Printf("\nHow fast the host was as the run began: %s.\n%s: %s.\n", r.machine.speed, stealHeading, st)
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func run(ctx context.Context, c config) (*report, error) {
	r := &report{cfg: c, started: time.Now()}
	r.machine = describeMachine()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "hsbench-bin")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	child := filepath.Join(scratch, "child")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", child, "./internal/tools/bench/child").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the bench child (run from the module root): %w\n%s", err, out)
	}
	r.steal.begin()
	step := func(name string, f func() error) error {
		fmt.Fprintf(os.Stderr, "bench: %s\n", name)
		t := time.Now()
		err := r.steal.measure(name, f)
		fmt.Fprintf(os.Stderr, "bench: %s done in %s\n", name, time.Since(t).Round(time.Millisecond))
		return err
	}
	defer r.steal.end()
	if err := step("restart latency", func() error {
		r.restart, err = restartLatency(ctx, c, self, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("restart breakdown", func() error {
		r.breakdown, err = restartBreakdown(ctx, c, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("restart phases", func() error {
		r.phases, err = traceRestarts(ctx, c, self, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("sweep cost", func() error {
		r.sweep, err = sweepCost(ctx, c, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("100 000 lock files", func() error {
		r.scale, err = scaleCost(ctx, c, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("power-loss recovery", func() error {
		r.power, err = powerLoss(ctx, c, child)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("idle cost", func() error {
		r.idle, err = idleCost(ctx, c)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("hang detection", func() error {
		r.hang, err = hangCost(ctx, c, c.hangs)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("output flood", func() error {
		r.flood, err = floodCost(ctx, c)
		return err
	}); err != nil {
		return nil, err
	}
	// After every section the targets are read from: its syncfs writes
	// back whatever the file system holds dirty. Run right after the sweep
	// rounds, it came before a 100 000-file start sweep that then took
	// 47.6 us per file instead of about 27.
	if err := step("unlink cost", func() error {
		r.unlink, err = unlinkCost(500)
		return err
	}); err != nil {
		return nil, err
	}
	if c.goBench {
		if err := step("go micro-benchmarks", func() error {
			r.goBench, err = goBenchmarks(ctx)
			return err
		}); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	return r, nil
}
