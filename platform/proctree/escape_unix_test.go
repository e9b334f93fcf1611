//go:build unix

package proctree

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// escapeHelper is one process of an escaping tree (PLATFORM_ESCAPE names
// the role): it ignores every catchable signal but records it by writing
// "<pid> <signal>" to stdout, prints "<pid> up" once its handlers are in
// place, starts the processes its role asks for, and sleeps.
func escapeHelper() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2, unix.SIGQUIT)
	me := strconv.Itoa(os.Getpid())
	say := func(s string) { os.Stdout.WriteString(me + " " + s + "\n") }
	spawn := func(role string, attr *syscall.SysProcAttr) *exec.Cmd {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PLATFORM_ESCAPE="+role)
		c.Stdout, c.SysProcAttr = os.Stdout, attr
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		return c
	}
	say("up")
	switch os.Getenv("PLATFORM_ESCAPE") {
	case "setsid": // the gateway starts a helper in a session of its own
		spawn("sleeper", &syscall.SysProcAttr{Setsid: true})
	case "orphan": // double fork: the helper's parent exits, orphaning it
		spawn("orphaner", nil)
	case "orphaner":
		c := spawn("sleeper", &syscall.SysProcAttr{Setsid: true})
		_ = c.Process.Release()
		os.Exit(0)
	case "pgrp": // a child in the group whose own child leaves it
		spawn("pgrp-child", nil)
	case "pgrp-child":
		spawn("sleeper", &syscall.SysProcAttr{Setpgid: true})
	case "leave": // the root itself tries to leave its group, for its parent's
		spawn("sleeper", nil)
		pg, _ := unix.Getpgid(os.Getppid())
		// A session leader's group is fixed: the root, in a session of its
		// own, cannot leave it (EPERM), and nothing outside its session can
		// join it.
		if err := unix.Setpgid(0, pg); errors.Is(err, unix.EPERM) {
			say("stayed")
		} else {
			say("left")
		}
	case "fork": // a helper in a session of its own that forks without end
		spawn("forker", &syscall.SysProcAttr{Setsid: true})
	case "forker":
		for {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), "PLATFORM_ESCAPE=sleeper")
			if c.Start() == nil {
				_ = c.Process.Release()
			}
		}
	}
	for s := range sigs {
		say(s.String())
	}
}

// escaped is what the test saw of an escaping tree.
type escaped struct {
	procs map[int]uint64 // pid → start time of every process that said "up"
	sigs  []string       // every "<pid> <signal>" line
}

func (e *escaped) read(t *testing.T, r *bufio.Reader, want int, also string) {
	t.Helper()
	alsoSeen := also == ""
	for len(e.procs) < want || !alsoSeen {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("escaping tree: %v after %v", err, e.procs)
		}
		f := strings.Fields(line)
		pid, _ := strconv.Atoi(f[0])
		switch f[1] {
		case "up":
			p, err := readProc(pid)
			if err != nil {
				t.Fatalf("pid %d said up but cannot be read: %v", pid, err)
			}
			e.procs[pid] = p.start
		case also:
			alsoSeen = true
		case "left":
			t.Fatalf("the root %d left its process group for its parent's: it does not lead a session of its own", pid)
		default:
			e.sigs = append(e.sigs, strings.TrimSpace(line))
		}
	}
}

// TestKillTakesEscapedProcesses attacks Tree.Kill with a tree that leaves
// its process group every way a process can, each process ignoring every
// catchable signal: a helper in its own session, a double-forked orphan,
// a grandchild in a group of its own, a root that tries to join its
// parent's group (and must be refused: it leads its own session), a helper that forks without end. Kill and Wait must return, every
// process of the tree must be dead, and a sentinel, another tree's root
// started with the same Reaper, must get no signal.
func TestKillTakesEscapedProcesses(t *testing.T) {
	r, err := BecomeSubreaper()
	if errors.Is(err, errors.ErrUnsupported) {
		r = nil // parent links alone: the double-forked orphan is out of reach
	} else if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		role      string
		n         int    // processes that say "up", the forker's children aside
		also      string // a word the tree says once it has escaped
		linuxOnly bool
	}{
		{role: "setsid", n: 2},
		{role: "orphan", n: 3, linuxOnly: true},
		{role: "pgrp", n: 3},
		{role: "leave", n: 2, also: "stayed"},
		{role: "fork", n: 2},
	} {
		t.Run(tc.role, func(t *testing.T) {
			if tc.linuxOnly && r == nil {
				t.Skip("an orphan is found only by a subreaper, which this OS does not have")
			}
			sentinel := startSentinelTree(t, r)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "PLATFORM_HELPER=escape", "PLATFORM_ESCAPE="+tc.role)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			tree, err := Start(cmd, nil, r)
			if err != nil {
				t.Fatal(err)
			}
			e := &escaped{procs: map[int]uint64{}}
			br := bufio.NewReader(out)
			e.read(t, br, tc.n, tc.also)
			if err := tree.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			done := make(chan error, 1)
			go func() { _, err := tree.Wait(context.Background()); done <- err }()
			select {
			case err := <-done:
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
					t.Errorf("root: %v, want killed", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Wait still waits 30 s after Kill: the root %d was never killed", tree.Pid())
			}
			for pid, start := range e.procs {
				waitDead(t, r, pid, start)
			}
			if tc.role == "fork" {
				for pid := range e.procs {
					if pid != tree.Pid() {
						noneInGroup(t, r, pid)
					}
				}
			}
			// Every line left: what the tree said after Kill.
			rest, _ := io.ReadAll(br)
			// SIGSTOP and SIGKILL cannot be caught: nothing else is sent.
			if got := strings.TrimSpace(string(rest)); len(e.sigs) > 0 || got != "" {
				t.Errorf("the tree caught signals: %q, then said %q", e.sigs, got)
			}
			sentinel.untouched(t)
		})
	}
}

// sentinelTree is a tree of its own that records any signal it gets.
type sentinelTree struct {
	tree  *Tree
	stdin io.WriteCloser
}

func startSentinelTree(t *testing.T, r *Reaper) *sentinelTree {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=lock", "PLATFORM_LOCK="+t.TempDir()+"/lock")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	tree, err := Start(cmd, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("sentinel said %q", line)
	}
	s := &sentinelTree{tree: tree, stdin: in}
	t.Cleanup(func() { _ = tree.Kill(); _, _ = tree.Wait(context.Background()) })
	return s
}

// untouched closes the sentinel's stdin: it exits 0, unless a signal
// (any: it handles none) ended it first.
func (s *sentinelTree) untouched(t *testing.T) {
	t.Helper()
	s.stdin.Close()
	if _, err := s.tree.Wait(context.Background()); err != nil {
		t.Errorf("the sentinel, outside the tree, was signalled: %v", err)
	}
}

// waitDead waits until pid, started at start, is dead: gone, a zombie, or
// its pid another process's. Zombies re-parented to us are reaped.
func waitDead(t *testing.T, r *Reaper, pid int, start uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := openHandle(pid)
	defer h.close()
	for {
		r.Reap()
		p, err := readProc(pid)
		if err != nil || p.start != start || p.state == 'Z' {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pid %d (%s, state %c) survived the kill", pid, p.name, p.state)
		}
		// The exit is the event: a pidfd polls readable at it (where
		// there is no pidfd, awaitExit waits a tick).
		awaitExit(ctx, []handle{h}, 5*time.Millisecond)
	}
}

// noneInGroup waits until no live process is left in the group pg.
func noneInGroup(t *testing.T, r *Reaper, pg int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.Reap()
		procs, err := readProcs()
		if err != nil {
			t.Fatal(err)
		}
		var left []handle
		for _, p := range procs {
			if p.pgid == pg && p.state != 'Z' {
				left = append(left, openHandle(p.pid))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the forker's group %d survived the kill", len(left), pg)
		}
		// Any member's exit is the event (see waitDead).
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		awaitExit(ctx, left, 5*time.Millisecond)
		cancel()
		for _, h := range left {
			h.close()
		}
	}
}
