package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/cgrouptest"
	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// cgroupReport is what the helper supervisor saw, for the test to judge.
type cgroupReport struct {
	Error string
	Exit  Exit
	Logs  []map[string]any
}

// TestCgroupSupervisorHelper is not a test: with SUPERVISOR_CGROUP_HELPER
// set to a pid file it is a supervisor started in a delegated cgroup. It
// finds the cgroup as `run` does, starts a gateway that leaves a helper in
// a session of its own (holding its stdout, its pid in the pid file) and
// exits 3, waits for that exit, and prints what it saw as JSON.
func TestCgroupSupervisorHelper(t *testing.T) {
	pidFile := os.Getenv("SUPERVISOR_CGROUP_HELPER")
	if pidFile == "" {
		return
	}
	var rep cgroupReport
	defer func() {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
		os.Exit(0)
	}()
	cg, err := proctree.DelegatedCgroups(context.Background())
	if err != nil {
		rep.Error = err.Error()
		return
	}
	script := `mkfifo "$1.fifo" || exit 99
setsid sh -c 'echo $$ >"$0" && echo ok >"$0.fifo" && exec sleep 60' "$1" &
read ok <"$1.fifo"; exit 3`
	cfg := &Config{Command: []string{"/bin/sh", "-c", script, "sh", pidFile}, Cgroups: cg}
	core, logs := observer.New(zapcore.DebugLevel)
	c, err := startChild(cfg, procstate.Identity{PID: os.Getpid()}, zap.New(core), SystemClock{})
	if err != nil {
		rep.Error = err.Error()
		return
	}
	c.begin()
	rep.Exit = c.wait(context.Background())
	for _, l := range logs.All() {
		m := l.ContextMap()
		m["msg"] = l.Message
		rep.Logs = append(rep.Logs, m)
	}
}

// A gateway's helper that left its process group (setsid) and holds its
// stdout dies with the gateway when a cgroup is delegated to us; the
// kill is logged once with its evidence; a process in a sibling cgroup,
// not ours, is untouched.
func TestCgroupTakesTheGatewaysHelper(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid(1) (util-linux) to start a helper outside the gateway's process group")
	}
	base, _ := cgrouptest.New(t)
	deleg := cgrouptest.Sub(t, base, "delegated", "trusted.delegate", "1")
	bystander := startIn(t, cgrouptest.Sub(t, base, "sibling"), "sleep", "60")

	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	fd, err := syscall.Open(deleg, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupSupervisorHelper$")
	cmd.Env = append(os.Environ(), "SUPERVISOR_CGROUP_HELPER="+pidFile, "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper supervisor: %v\n%s", err, out)
	}
	var rep cgroupReport
	if err := json.Unmarshal(out, &rep); err != nil || rep.Error != "" {
		t.Fatalf("helper supervisor: %v %s\n%s", err, rep.Error, out)
	}
	data, err := os.ReadFile(pidFile)
	helper, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil {
		t.Fatalf("no helper pid: %v %v", err, perr)
	}
	if rep.Exit.Code != 3 || rep.Exit.StartError != "" || rep.Exit.Signal != "" {
		t.Errorf("exit = %+v, want the gateway's own exit 3", rep.Exit)
	}
	// The helper's exit was complete (its cgroup emptied) before the exit
	// was reported: it is a zombie now, or reaped.
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", helper)); err == nil && !zombie(st) {
		t.Errorf("the gateway's helper %d still runs after the gateway's exit", helper)
	}
	var kills []map[string]any
	for _, l := range rep.Logs {
		if l["msg"] == "killed what the exited gateway left in its cgroup" {
			kills = append(kills, l)
		}
	}
	if len(kills) != 1 {
		t.Fatalf("the kill was logged %d times, want once: %v", len(kills), rep.Logs)
	}
	pids, _ := kills[0]["pids"].([]any)
	ev, _ := kills[0]["evidence"].(string)
	if len(pids) != 1 || pids[0] != float64(helper) || kills[0]["cgroup"] != filepath.Join(deleg, "gateway") || !strings.Contains(ev, "trusted.delegate") {
		t.Errorf("the kill's log = %v, want the helper %d in %s/gateway, with the delegation as evidence", kills[0], helper, deleg)
	}
	if !slices.ContainsFunc(rep.Logs, func(l map[string]any) bool { return l["msg"] == "the gateway runs in a cgroup of its own" }) {
		t.Errorf("no line said where the gateway runs: %v", rep.Logs)
	}
	if !bystander.alive() {
		t.Errorf("the process in a sibling cgroup was killed")
	}
}

func zombie(stat []byte) bool {
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// inCgroupProc is a process started straight into a cgroup, killed when the
// test ends.
type inCgroupProc struct{ exited chan struct{} }

func (p *inCgroupProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func startIn(t *testing.T, dir string, argv ...string) *inCgroupProc {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &inCgroupProc{exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return p
}
