package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// treeEnv makes the test binary one process of an escaping gateway tree
// (the value names its role); treeLogEnv names the file where each
// process appends "<pid> <start time> up" once its handlers are in place
// and "<pid> <start time> <signal>" for every signal it catches. Every
// process ignores every catchable signal.
const (
	treeEnv    = "HERMES_CHAOS_TREE"
	treeLogEnv = "HERMES_CHAOS_TREE_LOG"
)

func init() {
	if role := os.Getenv(treeEnv); role != "" {
		escapingGateway(role)
	}
}

func escapingGateway(role string) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2, unix.SIGQUIT)
	f, err := os.OpenFile(os.Getenv(treeLogEnv), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		os.Exit(3)
	}
	st := "?"
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			if fs := strings.Fields(string(b[i+1:])); len(fs) > 19 {
				st = fs[19]
			}
		}
	}
	say := func(s string) { _, _ = f.WriteString(strconv.Itoa(os.Getpid()) + " " + st + " " + s + "\n") }
	spawn := func(role string, attr *syscall.SysProcAttr) *exec.Cmd {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), treeEnv+"="+role)
		c.SysProcAttr = attr
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		return c
	}
	say("up")
	switch role {
	case "helper":
		spawn("sleeper", nil)
	case "setsid":
		spawn("sleeper", &syscall.SysProcAttr{Setsid: true})
	case "orphan":
		spawn("orphaner", nil)
	case "orphaner":
		_ = spawn("sleeper", &syscall.SysProcAttr{Setsid: true}).Process.Release()
		os.Exit(0)
	case "pgrp":
		spawn("pgrp-child", nil)
	case "pgrp-child":
		spawn("sleeper", &syscall.SysProcAttr{Setpgid: true})
	case "leave":
		spawn("sleeper", nil)
		pg, _ := unix.Getpgid(os.Getppid())
		if unix.Setpgid(0, pg) != nil {
			os.Exit(3)
		}
		say("left")
	case "fork":
		spawn("forker", &syscall.SysProcAttr{Setsid: true})
	case "forker":
		for {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), treeEnv+"=quiet")
			if c.Start() == nil {
				_ = c.Process.Release()
			}
		}
	}
	for s := range sigs {
		say(s.String())
	}
}

type treeLine struct {
	pid   int
	start string
	what  string
}

func readTreeLog(t *testing.T, path string) []treeLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []treeLine
	for l := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(l), " ", 3)
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		out = append(out, treeLine{pid, f[1], f[2]})
	}
	return out
}

// sameProcess reports whether pid is alive (no zombie) with start time st.
func sameProcess(pid int, st string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 19 && f[0] != "Z" && f[19] == st
}

// TestStopTakesEscapedTree attacks `stop` with gateways whose helpers
// leave the tree's process group every way a process can, all ignoring
// SIGTERM: a helper in its own session, a double-forked orphan in its
// own session, a grandchild in a group of its own, a gateway that joins
// the supervisor's group, a helper forking without end. No cgroup is
// delegated here. `stop` must complete within the stop timeout plus
// supervisor.KillGrace, every process of the tree must be dead, and a
// sentinel that a forged gateway.pid names must get no signal.
func TestStopTakesEscapedTree(t *testing.T) {
	for _, tc := range []struct {
		role string
		n    int // processes that say "up", the forker's children aside
	}{
		{"setsid", 2}, {"orphan", 3}, {"pgrp", 3}, {"leave", 2}, {"fork", 2},
	} {
		t.Run(tc.role, func(t *testing.T) {
			sent := startSentinel(t, sentinelOpts{})
			h := newHome(t, "")
			log := filepath.Join(h.dir, "tree.log")
			if err := os.WriteFile(log, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			h.extraEnv = []string{treeEnv + "=" + tc.role, treeLogEnv + "=" + log}
			const stopTimeout = 300 * time.Millisecond
			sup := h.start(t, "run", "--stop-timeout="+stopTimeout.String(), "--", os.Args[0])
			up := func() int {
				n := 0
				for _, l := range readTreeLog(t, log) {
					if l.what == "up" {
						n++
					}
				}
				return n
			}
			waitFor(t, "the escaping tree", func() bool { return up() >= tc.n }, sup.out.String)
			// The pid file names the sentinel: a file proves nothing.
			r := lockstore.NewRecord(procstate.Identity{PID: sent.id.PID, StartTime: sent.id.StartTime, Argv: sent.id.Argv}, h.Home)
			b, _ := json.Marshal(r)
			if err := os.WriteFile(h.PIDFile(), b, 0o644); err != nil {
				t.Fatal(err)
			}
			timeout := stopTimeout + supervisor.KillGrace + 5*time.Second
			out, code := h.exec("stop", "--timeout="+timeout.String())
			if code != 0 || !strings.Contains(out, "stop: stopped") {
				t.Fatalf("stop: exit %d: %s\nsupervisor:\n%s", code, out, sup.out)
			}
			if code := sup.exited(t, 30*time.Second); code != 0 {
				t.Fatalf("supervisor exited %d\n%s", code, sup.out)
			}
			var gateway int
			for i, l := range readTreeLog(t, log) {
				if i == 0 {
					gateway = l.pid
				}
				switch {
				case l.what == "up" || l.what == "left":
					if sameProcess(l.pid, l.start) {
						t.Errorf("pid %d of the tree survived the stop\n%s", l.pid, sup.out)
					}
				case l.pid != gateway || l.what != "terminated":
					t.Errorf("pid %d caught %s: only the gateway is asked to stop", l.pid, l.what)
				}
			}
			if tc.role == "fork" {
				noneLeft(t, h.Home)
			}
			sent.untouched(t)
		})
	}
}

// noneLeft fails if any process still carries this home in its
// environment: the forker's children say nothing, so they are found so.
func noneLeft(t *testing.T, home string) {
	t.Helper()
	waitFor(t, "the forker's children to be gone", func() bool {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00HERMES_HOME="+home+"\x00")) && alive(pid) {
				return false
			}
		}
		return true
	})
}
