//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// contender is one supervisor running the bench child.
type contender struct {
	name string
	note string
	// cmd returns the supervisor's command line for a child that writes
	// pidFile, with dir as its scratch space; nil when not installed.
	cmd func(dir, pidFile string) (*exec.Cmd, error)
	// readPID reads the pid the child wrote; the default is a bare integer.
	readPID func(path string) int
	// pidFile is where the child writes, relative to dir.
	pidFile string
	// keepLog: the supervisor's log is kept in the result.
	keepLog bool
	// beforeKill, when set, hears of each kill just before it is sent:
	// the supervisor's pid and the child's.
	beforeKill func(supervisor, child int)
}

type latency struct {
	name, note string
	skipped    string // why it did not run
	samples    []time.Duration
	sum        summary
	log        []byte // the supervisor's log, with contender.keepLog
}

func restartLatency(ctx context.Context, c config, self, child string) ([]latency, error) {
	hs := func(extra ...string) func(dir, pidFile string) (*exec.Cmd, error) {
		return supervised(c, c.supervisor, child, extra...)
	}
	contenders := []contender{
		floorContender(self, child),
		{name: "hermes-supervisor", note: "same child; sweep before start, release after exit", cmd: hs()},
		{name: "hermes-supervisor + config.yaml", note: "same child; a 128 KB <home>/config.yaml, mostly comments, the size Hermes seeds it at, read before every start",
			cmd: withHermesConfig(hs(), 128<<10)},
		{name: "hermes-supervisor + demo gateway", note: "the real file dance: gateway.pid, gateway.lock, a scoped lock, state file; until gateway.pid names the new pid",
			cmd: hs("--demo"), pidFile: "home/gateway.pid", readPID: readRecordPID},
		{name: "runit runsv", note: "run script execs the child", cmd: serviceDir("runsv", child)},
		{name: "s6-supervise", note: "run script execs the child; s6 waits 1 s between starts by design", cmd: serviceDir("s6-supervise", child)},
		{name: "supervisord", note: "autorestart=true, startsecs=0", cmd: supervisord(child)},
	}
	return measureInTurn(ctx, c, contenders)
}

// supervised runs the hermes-supervisor binary bin on the bench child (or
// with extra, such as --demo, in its place). Each SIGKILL comes after
// c.gap of uptime, and the supervisor is told that this counts as a
// healthy run (--reset-after), so every sample is "the first restart
// after a healthy run", the case the target is about. The default
// backoff policy is otherwise unchanged.
func supervised(c config, bin, child string, extra ...string) func(dir, pidFile string) (*exec.Cmd, error) {
	reset := (c.gap * 3 / 5).String()
	return func(dir, pidFile string) (*exec.Cmd, error) {
		args := []string{"run", "--home", filepath.Join(dir, "home"), "--lock-dir", filepath.Join(dir, "locks"),
			"--reset-after", reset, "--crash-loop-max", "100000"}
		args = append(args, extra...)
		if len(extra) == 0 {
			args = append(args, "--", child, pidFile)
		}
		return exec.Command(bin, args...), nil
	}
}

// floorContender is the bare fork/exec loop every ratio is taken against.
func floorContender(self, child string) contender {
	return contender{name: "floor", note: "a bare Go loop: fork/exec the child, wait, repeat",
		cmd: func(dir, pidFile string) (*exec.Cmd, error) {
			return exec.Command(self, "floor", child, pidFile), nil
		}}
}

// serviceDir makes a runit/s6 style service directory whose run script
// execs the child.
func serviceDir(tool, child string) func(dir, pidFile string) (*exec.Cmd, error) {
	return func(dir, pidFile string) (*exec.Cmd, error) {
		bin, err := exec.LookPath(tool)
		if err != nil {
			return nil, nil
		}
		sv := filepath.Join(dir, "sv")
		if err := os.MkdirAll(sv, 0o755); err != nil {
			return nil, err
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %q %q\n", child, pidFile)
		if err := os.WriteFile(filepath.Join(sv, "run"), []byte(script), 0o755); err != nil {
			return nil, err
		}
		return exec.Command(bin, sv), nil
	}
}

// withHermesConfig writes a Hermes-like config.yaml of about size bytes
// into the home before the supervisor starts: Hermes seeds the file from
// an example of that size, most of it comments, and the supervisor reads
// gateway.systemd_watchdog_seconds from it before every start. The file
// is dated an hour back, as one written at install time would be.
func withHermesConfig(cmd func(dir, pidFile string) (*exec.Cmd, error), size int) func(dir, pidFile string) (*exec.Cmd, error) {
	return func(dir, pidFile string) (*exec.Cmd, error) {
		home := filepath.Join(dir, "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, err
		}
		var b strings.Builder
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "# %s\n# Section %d: what each setting does, its default, and when to change it.\nsection%d:\n", strings.Repeat("=", 77), i, i)
			for k := range 8 {
				fmt.Fprintf(&b, "  # key%d: a commented-out setting with a long explanation of its values\n  key%d: \"value %d\"  # and a trailing comment\n", k, k, k)
			}
		}
		path := filepath.Join(home, "config.yaml")
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			return nil, err
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(path, old, old); err != nil {
			return nil, err
		}
		return cmd(dir, pidFile)
	}
}

func supervisord(child string) func(dir, pidFile string) (*exec.Cmd, error) {
	return func(dir, pidFile string) (*exec.Cmd, error) {
		bin, err := exec.LookPath("supervisord")
		if err != nil {
			return nil, nil
		}
		conf := filepath.Join(dir, "supervisord.conf")
		text := fmt.Sprintf(`[supervisord]
nodaemon=true
user=%s
logfile=%s
pidfile=%s
[program:child]
command=%s %s
autorestart=true
startsecs=0
startretries=100000
`, currentUser(), filepath.Join(dir, "supervisord.log"), filepath.Join(dir, "supervisord.pid"), child, pidFile)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		return exec.Command(bin, "-c", conf), nil
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return strconv.Itoa(os.Getuid())
}

// measureInTurn starts every contender, then kills their children in
// turn, one contender at a time, c.kills rounds, each round in its own
// order: a host that slows down for a minute slows every contender's
// samples alike, where measuring one contender after another put the
// floor and us minutes apart. A contender's i-th sample is of round i.
func measureInTurn(ctx context.Context, c config, cts []contender) ([]latency, error) {
	trials := make([]*trial, len(cts))
	defer func() {
		for _, t := range trials {
			t.stop()
		}
	}()
	for i, ct := range cts {
		t, err := startTrial(ctx, ct)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ct.name, err)
		}
		trials[i] = t
	}
	// Each round kills in a new order: what a kill follows (a peer's
	// restart that has just woken both CPUs, or a second of idle) moved a
	// row's median by a fifth here, and in one fixed order it favoured
	// the same rows every round. The order is seeded, so a run can be
	// repeated.
	rng := rand.New(rand.NewPCG(5, 6))
	order := make([]*trial, len(trials))
	copy(order, trials)
	for i := 0; i < c.kills; i++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, t := range order {
			if t.cmd == nil {
				continue
			}
			if err := t.restart(ctx, c.gap); err != nil {
				return nil, fmt.Errorf("%s: restart %d: %w", t.l.name, i+1, err)
			}
		}
	}
	out := make([]latency, len(trials))
	for i, t := range trials {
		t.stop()
		t.l.sum = summarize(t.l.samples)
		out[i] = t.l
	}
	return out, nil
}

// trial is one contender's supervisor, running the bench child.
type trial struct {
	ct      contender
	l       latency
	dir     string
	pidFile string
	readPID func(string) int
	cmd     *exec.Cmd // nil: not installed, or stopped
	logf    *os.File
	w       *dirWatch
	pid     int       // the child running now
	up      time.Time // when it was seen
}

// startTrial starts ct's supervisor and waits for its first child. A
// contender that is not installed gets a trial with no command, and a
// latency that says so.
func startTrial(ctx context.Context, ct contender) (*trial, error) {
	t := &trial{ct: ct, l: latency{name: ct.name, note: ct.note}, readPID: ct.readPID}
	dir, err := os.MkdirTemp("", "hsbench")
	if err != nil {
		return nil, err
	}
	t.dir = dir
	rel := ct.pidFile
	if rel == "" {
		rel = "child.pid"
	}
	t.pidFile = filepath.Join(dir, rel)
	if t.readPID == nil {
		t.readPID = readBarePID
	}
	fail := func(err error) (*trial, error) {
		t.stop()
		return nil, err
	}
	// Made here, so that its watch is in place before the first start.
	if err := os.MkdirAll(filepath.Dir(t.pidFile), 0o700); err != nil {
		return fail(err)
	}
	cmd, err := ct.cmd(dir, t.pidFile)
	if err != nil {
		return fail(err)
	}
	if cmd == nil {
		t.l.skipped = "not installed (the bench script installs it with apt when it can)"
		return t, nil
	}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if t.logf, err = os.Create(filepath.Join(dir, "supervisor.log")); err != nil {
		return fail(err)
	}
	cmd.Stdout, cmd.Stderr = t.logf, t.logf
	if t.w, err = newDirWatch(filepath.Dir(t.pidFile)); err != nil {
		return fail(err)
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	t.cmd = cmd
	if t.pid, err = t.w.pid(ctx, t.pidFile, t.readPID, 0, 15*time.Second); err != nil {
		return fail(fmt.Errorf("first start: %w (log: %s)", err, tail(t.logf.Name())))
	}
	t.up = time.Now()
	return t, nil
}

// restart lets the child run for gap, kills it, and times until the pid
// file names the next one.
func (t *trial) restart(ctx context.Context, gap time.Duration) error {
	if err := sleep(ctx, gap-time.Since(t.up)); err != nil {
		return err
	}
	if t.ct.beforeKill != nil {
		t.ct.beforeKill(t.cmd.Process.Pid, t.pid)
	}
	t0 := time.Now()
	if err := syscall.Kill(t.pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill child %d: %w", t.pid, err)
	}
	next, err := t.w.pid(ctx, t.pidFile, t.readPID, t.pid, 15*time.Second)
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, tail(t.logf.Name()))
	}
	t.l.samples = append(t.l.samples, time.Since(t0))
	t.pid, t.up = next, time.Now()
	return nil
}

// stop ends the supervisor, then what it ran, and removes the trial's
// files; it keeps the supervisor's log with contender.keepLog. Stopping
// twice is harmless.
func (t *trial) stop() {
	if t == nil {
		return
	}
	if t.cmd != nil {
		// The supervisor first, so nothing restarts what we kill next.
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		_ = t.cmd.Wait()
		t.cmd = nil
		if pid := t.readPID(t.pidFile); pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.ct.keepLog {
			t.l.log, _ = os.ReadFile(t.logf.Name())
		}
	}
	if t.w != nil {
		t.w.Close()
		t.w = nil
	}
	if t.logf != nil {
		t.logf.Close()
		t.logf = nil
	}
	if t.dir != "" {
		os.RemoveAll(t.dir)
		t.dir = ""
	}
}

// waitPID waits until path names a live pid other than old, woken by
// every change in path's directory.
func waitPID(ctx context.Context, path string, read func(string) int, old int, limit time.Duration) (int, error) {
	w, err := watchMade(ctx, filepath.Dir(path), limit)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	return w.pid(ctx, path, read, old, limit)
}

// watchMade watches dir, first waiting in its parent for dir to be made
// when it is missing: a gateway makes its home as it starts.
func watchMade(ctx context.Context, dir string, limit time.Duration) (*dirWatch, error) {
	w, err := newDirWatch(dir)
	if !errors.Is(err, unix.ENOENT) {
		return w, err
	}
	parent, err := newDirWatch(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	err = parent.until(ctx, limit, func() bool {
		w, err = newDirWatch(dir)
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s was not made: %w", dir, err)
	}
	return w, nil
}

// pid is waitPID on a watch already set up, so that setting it up is not
// timed.
func (w *dirWatch) pid(ctx context.Context, path string, read func(string) int, old int, limit time.Duration) (int, error) {
	var pid int
	err := w.until(ctx, limit, func() bool {
		pid = read(path)
		return pid > 0 && pid != old && syscall.Kill(pid, 0) == nil
	})
	if err != nil {
		return 0, fmt.Errorf("no new pid in %s: %w", path, err)
	}
	return pid, nil
}

func readBarePID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// readRecordPID reads a Hermes pid record, which the gateway writes in
// place (not by rename), so a half-written one reads as 0.
func readRecordPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	r, err := lockstore.ParseRecord(b)
	if err != nil {
		return 0
	}
	return r.PID
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return strings.TrimSpace(string(b))
}

// floor is the bare restart loop the others are compared with.
func floor(args []string) {
	for {
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
		_ = cmd.Wait()
	}
}
