//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

type idleResult struct {
	window       time.Duration
	rssKB, hwmKB int
	cpu          time.Duration // on-CPU time of all threads in the window
	cpuPerMinute time.Duration
	switches     int // context switches of all threads in the window
	threads      int
	woken        int // threads that switched at least once in the window
}

// taskStats sums, over every thread of pid, the nanoseconds on CPU
// (schedstat, exact, unlike the 10 ms ticks of /proc/pid/stat), and gives
// each thread's context switches (each one a wake-up) by thread id.
func taskStats(pid int) (cpu time.Duration, switches map[string]int, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, nil, err
	}
	switches = map[string]int{}
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
		b, err := os.ReadFile(dir + "schedstat")
		if err != nil {
			continue // the thread just exited
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(ns)
		}
		st, _ := statusFields(dir + "status")
		switches[t.Name()] = st["voluntary_ctxt_switches"] + st["nonvoluntary_ctxt_switches"]
	}
	return cpu, switches, nil
}

// statusFields reads the numeric fields of a /proc status file.
func statusFields(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if fs := strings.Fields(v); len(fs) > 0 {
			if n, err := strconv.Atoi(fs[0]); err == nil {
				m[k] = n
			}
		}
	}
	return m, sc.Err()
}

// idleCost watches `run --demo` with args added, once it is healthy.
func idleCost(ctx context.Context, c config, args ...string) (idleResult, error) {
	res := idleResult{window: c.idle}
	root, err := os.MkdirTemp("", "hsbench-idle")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(root)
	l := lockstore.Layout{Home: filepath.Join(root, "home"), LockDir: filepath.Join(root, "locks")}
	cmd := exec.Command(c.supervisor, append([]string{"run", "--demo", "--home", l.Home, "--lock-dir", l.LockDir}, args...)...)
	logf, err := os.Create(filepath.Join(root, "sup.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	for deadline := time.Now().Add(15 * time.Second); !healthy(l, 0); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("supervisor never got its gateway running (log: %s)", tail(logf.Name()))
		}
	}
	// Let start-up settle (GC, the ready timer) before the window opens.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return res, err
	}
	cpu0, sw0, err := taskStats(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	if err := sleep(ctx, c.idle); err != nil {
		return res, err
	}
	cpu1, sw1, err := taskStats(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	st, err := statusFields(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return res, err
	}
	res.rssKB, res.hwmKB, res.threads = st["VmRSS"], st["VmHWM"], len(sw1)
	res.cpu = cpu1 - cpu0
	for tid, n := range sw1 {
		if d := n - sw0[tid]; d > 0 {
			res.switches += d
			res.woken++
		}
	}
	res.cpuPerMinute = time.Duration(float64(res.cpu) * float64(time.Minute) / float64(c.idle))
	return res, nil
}
