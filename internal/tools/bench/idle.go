//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// idleResult is the median of several consecutive windows, by CPU per
// minute: a window samples the host as much as the supervisor, and side by
// side runs of one build saw 30-s windows from 3.5 to 13.5 ms per minute.
type idleResult struct {
	window       time.Duration
	rssKB, hwmKB int
	cpu          time.Duration // on-CPU time of all threads in the window
	cpuPerMinute time.Duration
	switches     int // context switches of all threads in the window
	threads      int
	woken        int             // threads that switched at least once in the window
	perMinute    []time.Duration // every window's CPU per minute, in the order they ran
}

// windows says how the result was drawn, for a reader of the table.
func (r idleResult) windows() string {
	if len(r.perMinute) < 2 {
		return fmt.Sprintf("one window of %s", r.window)
	}
	all := make([]string, len(r.perMinute))
	for i, d := range r.perMinute {
		all[i] = d.Round(10 * time.Microsecond).String()
	}
	return fmt.Sprintf("median of %d windows of %s: %s", len(r.perMinute), r.window, strings.Join(all, ", "))
}

// idleWindow is what one window of an idle watch saw.
type idleWindow struct {
	cpu, perMinute time.Duration
	switches       int
	woken, threads int
}

// medianWindow returns the window whose CPU per minute is the median; of
// an even count, the higher middle one, which can only make a verdict stricter.
func medianWindow(ws []idleWindow) idleWindow {
	sorted := slices.Clone(ws)
	slices.SortFunc(sorted, func(a, b idleWindow) int { return cmp.Compare(a.perMinute, b.perMinute) })
	return sorted[len(sorted)/2]
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

// idleWatch measures pid's threads over one window.
func idleWatch(ctx context.Context, pid int, window time.Duration) (idleWindow, error) {
	var w idleWindow
	cpu0, sw0, err := taskStats(pid)
	if err != nil {
		return w, err
	}
	if err := sleep(ctx, window); err != nil {
		return w, err
	}
	cpu1, sw1, err := taskStats(pid)
	if err != nil {
		return w, err
	}
	w.cpu, w.threads = cpu1-cpu0, len(sw1)
	for tid, n := range sw1 {
		if d := n - sw0[tid]; d > 0 {
			w.switches += d
			w.woken++
		}
	}
	w.perMinute = time.Duration(float64(w.cpu) * float64(time.Minute) / float64(window))
	return w, nil
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
	return watchIdle(ctx, c, cmd.Process.Pid)
}

// watchIdle lets pid's start-up settle (GC, the ready timer), then
// watches it for c.idleWindows windows of c.idle; the median window counts.
func watchIdle(ctx context.Context, c config, pid int) (idleResult, error) {
	res := idleResult{window: c.idle}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return res, err
	}
	var ws []idleWindow
	for range max(c.idleWindows, 1) {
		w, err := idleWatch(ctx, pid, c.idle)
		if err != nil {
			return res, err
		}
		ws = append(ws, w)
		res.perMinute = append(res.perMinute, w.perMinute)
	}
	st, err := statusFields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return res, err
	}
	m := medianWindow(ws)
	res.rssKB, res.hwmKB, res.threads = st["VmRSS"], st["VmHWM"], ws[len(ws)-1].threads
	res.cpu, res.cpuPerMinute, res.switches, res.woken = m.cpu, m.perMinute, m.switches, m.woken
	return res, nil
}
