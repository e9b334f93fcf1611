//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
)

// hangInterval is the keep-alive deadline the hang measurements use.
const hangInterval = 2 * time.Second

type hangResult struct {
	interval time.Duration
	detect   summary // the gateway stops making progress → a new one is ready
	restart  summary // SIGKILL → a new one is ready: one normal restart
	idle     idleResult
	// floor is the least a receiver of the same keep-alives costs
	// (notifyFloor); floorSkipped says why it was not measured.
	floor        idleResult
	floorSkipped string
}

// hangCost measures hang detection with the demo gateway, which speaks
// Hermes' sd_notify protocol and hangs on request, against a normal
// restart of the same gateway, and the idle cost with the watchdog on.
func hangCost(ctx context.Context, c config, samples int) (hangResult, error) {
	res := hangResult{interval: hangInterval}
	var err error
	if res.detect, err = hangDetection(ctx, c, samples); err != nil {
		return res, err
	}
	if res.restart, err = killRestarts(ctx, c, samples); err != nil {
		return res, err
	}
	if res.idle, err = idleCost(ctx, c, "--watchdog", hangInterval.String()); err != nil {
		return res, err
	}
	res.floor, res.floorSkipped, err = notifyFloor(ctx, c)
	return res, err
}

// startDemo runs `hermes-supervisor run --demo` with JSON logs in a fresh
// home; stop ends it.
func startDemo(c config, env []string, args ...string) (l lockstore.Layout, log string, stop func(), err error) {
	root, err := os.MkdirTemp("", "hsbench-hang")
	if err != nil {
		return l, "", nil, err
	}
	l = lockstore.Layout{Home: filepath.Join(root, "home"), LockDir: filepath.Join(root, "locks")}
	log = filepath.Join(root, "sup.log")
	logf, err := os.Create(log)
	if err != nil {
		return l, "", nil, err
	}
	cmd := exec.Command(c.supervisor, append([]string{"run", "--demo", "--log-format", "json", "--home", l.Home, "--lock-dir", l.LockDir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return l, "", nil, err
	}
	return l, log, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
		os.RemoveAll(root)
	}, nil
}

// hangDetection lets every demo gateway hang one second after it is up,
// and times, from the supervisor's own log, each hang until the next
// gateway is ready. A run that short would count as a failure streak and
// back off, so --reset-after counts it healthy: each sample is one hang
// and one restart, not a growing delay.
func hangDetection(ctx context.Context, c config, samples int) (summary, error) {
	_, log, stop, err := startDemo(c, []string{"HERMES_DEMO_HANG_AFTER=1s"},
		"--watchdog", hangInterval.String(), "--reset-after", "100ms")
	if err != nil {
		return summary{}, err
	}
	defer stop()
	deadline := time.Now().Add(time.Duration(samples+2) * (hangInterval + 5*time.Second))
	for {
		d, err := hangSamples(log)
		if err != nil {
			return summary{}, err
		}
		if len(d) >= samples {
			return summarize(d[:samples]), nil
		}
		if time.Now().After(deadline) {
			return summary{}, fmt.Errorf("only %d of %d hangs caught (log: %s)", len(d), samples, tail(log))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return summary{}, err
		}
	}
}

// hangSamples pairs each "hanging now" line of the demo gateway with the
// next transition to running.
func hangSamples(path string) ([]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []time.Duration
	var hungAt time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			TS   string `json:"ts"`
			Msg  string `json:"msg"`
			Line string `json:"line"`
			To   string `json:"to"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04:05.000Z0700", e.TS)
		if err != nil {
			continue
		}
		switch {
		case e.Msg == "gateway output" && strings.Contains(e.Line, "hanging now"):
			hungAt = t
		case e.Msg == "state" && e.To == "running" && !hungAt.IsZero():
			out = append(out, t.Sub(hungAt))
			hungAt = time.Time{}
		}
	}
	return out, sc.Err()
}

// killRestarts times SIGKILL of a healthy demo gateway until the next one
// is ready, under the same supervisor settings: the "one normal restart"
// of the target.
func killRestarts(ctx context.Context, c config, samples int) (summary, error) {
	l, log, stop, err := startDemo(c, nil, "--watchdog", hangInterval.String(), "--reset-after", "100ms")
	if err != nil {
		return summary{}, err
	}
	defer stop()
	var d []time.Duration
	victim := 0
	for len(d) < samples {
		deadline := time.Now().Add(15 * time.Second)
		for !healthy(l, victim) {
			if time.Now().After(deadline) {
				return summary{}, fmt.Errorf("no healthy gateway after a kill (log: %s)", tail(log))
			}
			if err := sleep(ctx, time.Millisecond); err != nil {
				return summary{}, err
			}
		}
		if err := sleep(ctx, time.Second); err != nil {
			return summary{}, err
		}
		st, err := lockstore.ReadState(l.StateFile())
		if err != nil {
			return summary{}, err
		}
		victim = st.PID
		t0 := time.Now()
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			return summary{}, err
		}
		for !healthy(l, victim) {
			if time.Since(t0) > 15*time.Second {
				return summary{}, fmt.Errorf("no healthy gateway after a kill (log: %s)", tail(log))
			}
			if err := sleep(ctx, time.Millisecond); err != nil {
				return summary{}, err
			}
		}
		d = append(d, time.Since(t0))
	}
	return summarize(d), nil
}

// keepAlives is how many keep-alives the demo gateway sent in the idle
// window: one every interval/2.
func (h hangResult) keepAlives() int { return int(h.idle.window / (h.interval / 2)) }

// targets are the hang-detection rows of the targets table.
func (h hangResult) targets() string {
	target := h.interval + time.Second + h.restart.Med
	return fmt.Sprintf("| Hang to a new ready gateway, worst of %d | ≤ interval + 1 s + one restart = %s ms | %s ms | %s |\n", h.detect.N, ms(target), ms(h.detect.Max), met(h.detect.Max <= target)) +
		fmt.Sprintf("| Idle CPU, watchdog on at %s | ≤ %s per minute | %s per minute, %d wake-ups in %s (%s); %s | %s |\n", h.interval, targetCPU, h.idle.cpuPerMinute.Round(10*time.Microsecond), h.idle.switches, h.idle.window, h.idle.windows(), h.floorNote(), met(h.idle.cpuPerMinute <= targetCPU))
}

// floorNote sets the floor beside the supervisor's idle cost.
func (h hangResult) floorNote() string {
	if h.floorSkipped != "" {
		return "the floor was not measured: " + h.floorSkipped
	}
	return fmt.Sprintf("a bare C receiver of the same keep-alives (the floor, section 6): %s per minute", h.floor.cpuPerMinute.Round(10*time.Microsecond))
}

func (h hangResult) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	target := h.interval + time.Second + h.restart.Med
	p("## 6. Hang detection\n\n")
	p("`hermes-supervisor run --demo --watchdog %s`, with a demo gateway that speaks Hermes' sd_notify protocol (READY=1, then WATCHDOG=1 every %s) and hangs one second after it is up: it stops pinging and blocks, as a wedged event loop does. ", h.interval, h.interval/2)
	p("Timed, from the supervisor's own log, from the gateway's \"hanging now\" line until the next gateway is ready; %d hangs. ", h.detect.N)
	p("One normal restart is the same supervisor bringing back a SIGKILLed gateway (kill → `gateway_state.json` says running for a new pid), %d times.\n\n", h.restart.N)
	p("| | n | min ms | median ms | p90 ms | max ms |\n|---|---|---|---|---|---|\n")
	p("| hang → new gateway ready | %d | %s | %s | %s | %s |\n", h.detect.N, ms(h.detect.Min), ms(h.detect.Med), ms(h.detect.P90), ms(h.detect.Max))
	p("| SIGKILL → new gateway ready | %d | %s | %s | %s | %s |\n\n", h.restart.N, ms(h.restart.Min), ms(h.restart.Med), ms(h.restart.P90), ms(h.restart.Max))
	p("Target: at most interval + 1 s + one normal restart = %s + 1 s + %s = %s; the worst hang took %s: %s. ", h.interval, ms(h.restart.Med)+" ms", ms(target)+" ms", ms(h.detect.Max)+" ms", met(h.detect.Max <= target))
	p("The time spent is the deadline (the last keep-alive came up to %s before the hang), 0.5 s for the stack dump after SIGUSR2, and the restart.\n\n", h.interval/2)

	n := max(h.keepAlives(), 1)
	p("### Idle cost with the watchdog on\n\n")
	p("The same `run --demo --watchdog %s`, healthy, watched after 5 s of settling and measured as in section 4 (%s; the table shows the median window); the gateway sent about %d keep-alives in a window.\n\n", h.interval, h.idle.windows(), n)
	p("| | CPU in window | CPU per minute | target | wake-ups in window | per keep-alive | threads that woke | RSS |\n|---|---|---|---|---|---|---|---|\n")
	row := func(name string, r idleResult, verdict string) {
		p("| %s | %s | %s | %s | %d | %.1f wake-ups, %s CPU | %d of %d | %.1f MiB |\n", name,
			r.cpu.Round(time.Microsecond), r.cpuPerMinute.Round(time.Microsecond), verdict,
			r.switches, float64(r.switches)/float64(n), (r.cpu / time.Duration(n)).Round(100*time.Nanosecond), r.woken, r.threads, float64(r.rssKB)/1024)
	}
	row("hermes-supervisor", h.idle, fmt.Sprintf("≤ %s: %s", targetCPU, met(h.idle.cpuPerMinute <= targetCPU)))
	if h.floorSkipped == "" {
		row("floor: `floor/notify.c`", h.floor, "")
	}
	p("\n")
	p("The floor is `internal/tools/bench/floor/notify.c`, compiled with the host's C compiler, receiving the keep-alives of a demo gateway of its own at the same deadline")
	if h.floorSkipped != "" {
		p("; it was not measured in this run: %s. ", h.floorSkipped)
	} else {
		p(", watched the same way (%s) right after the supervisor's windows. ", h.floor.windows())
	}
	p("Per keep-alive it returns from `epoll_wait`, reads the datagram with its sender's credentials (`recvmsg`) and moves a timerfd deadline (`timerfd_settime`): the least a receiver that can tell a hang does, with no parsing, no check of the sender, no runtime. ")
	p("What the supervisor costs above it is its Go runtime and its checks.\n\n")
	p("What a keep-alive costs, by design (Linux): one thread, the one waiting in the runtime's poller, wakes, reads the datagram with a raw non-blocking `recvmsg` into buffers made once (a keep-alive allocates nothing; tests check that), ")
	p("records it atomically and moves the keep-alive deadline, a timerfd in the poller, with one raw `timerfd_settime`; a bare WATCHDOG=1 never reaches the state machine's goroutine. ")
	p("A syscall through the runtime's syscall entry would wake its sysmon thread from its deep sleep (a few 20 µs naps, then asleep again), and a pending runtime timer would wake sysmon at its due time and, when it fired, a second scheduler thread; ")
	p("with neither, sysmon sleeps its full minute, and the timerfd fires only when the keep-alives stop. The periodic GOMAXPROCS update is off (`//go:debug updatemaxprocs=0` in `cmd/hermes-supervisor`), so a sysmon wake-up reads no cgroup file. ")
	p("So the wake-ups per keep-alive above should be about one; more means something else woke the supervisor. ")
	p("On macOS the deadline is a runtime timer that re-arms itself when it fires, about once per deadline (not measured here). ")
	p("The cost scales with Hermes' ping rate, twice per deadline: its documented example of 120 s means one keep-alive a minute. Without the watchdog the idle cost is section 4's.\n\n")
	return b.String()
}

// hangSection starts section 6 of benchmarks.md.
const hangSection = "## 6. Hang detection\n"

// spliceHang puts a hang-only run into the benchmarks.md at path: section 6
// and the hang rows of the targets table are replaced, the rest is kept,
// and a note says which run each part comes from. A missing file gets
// section 6 alone.
func spliceHang(path string, h hangResult, started time.Time, args []string) error {
	note := fmt.Sprintf("*Section 6 and its targets were measured on their own (`go run ./internal/tools/bench %s`) on %s, in %s; the other sections are from the full run named at the top.*\n",
		strings.Join(args, " "), started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Round(time.Second))
	return spliceSection(path, hangSection, h.markdown()+note, h.targets(), "| Hang to a new ready gateway", "| Idle CPU, watchdog on")
}
