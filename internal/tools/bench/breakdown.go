//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// restartSteps are the steps of a restart as the supervisor logs them
// ("restart timing", at debug level), in order: each is the time from
// the end of the one before, the first from the moment the dead
// gateway's exit was seen; the last, settle, is timed from its own start.
var restartSteps = []struct{ key, what string }{
	{"tree_reaped", "kill what is left of the tree (our orphans' children list and the links from them); the root, a zombie until then, is reaped after this, off the restart's path"},
	{"output_drained", "read the dead gateway's output to its end"},
	{"event", "the exit reaches the state machine's goroutine"},
	{"close_watch", "stop watching the dead gateway: its sd_notify socket, alarm and timers"},
	{"release", "open the home and lock dir (once for the whole restart), remove our planned-stop marker if the dead gateway left it; its \"gateway exited\" line is held back from the path"},
	{"decide", "check the home and lock dir (statfs, access), apply the restart policy"},
	{"sweep", "sweep the home and lock dir, releasing the dead gateway's pid and lock records in the same pass, and find from the same look whether a gateway runs there; at debug level it writes its summary line, and with it the held exit line"},
	{"foreign_owner", "no live gateway we do not own holds the home (the sweep's answer)"},
	{"persist", "the nonce's hash in the state file, durably, before the first process carries it (once per supervisor)"},
	{"notify_socket", "take the sd_notify socket made while the last gateway ran, and empty it"},
	{"spawn", "fork/exec the new gateway"},
	{"settle", "3 ms after the fork, off the new gateway's first milliseconds and not in the total: start reading its output, inspect it, watch it, arm the watchdog, the transition to starting (its state file write waits 5 ms more)"},
}

type breakdownResult struct {
	restarts int
	steps    map[string]summary
	total    summary
}

// restartBreakdown runs hermes-supervisor with debug logs over the bench
// child, kills the child c.kills times, and reads the timing of each
// restart from the log.
func restartBreakdown(ctx context.Context, c config, child string) (breakdownResult, error) {
	reset := (c.gap * 3 / 5).String()
	ct := contender{name: "breakdown", keepLog: true, cmd: func(dir, pidFile string) (*exec.Cmd, error) {
		return exec.Command(c.supervisor, "run", "--home", filepath.Join(dir, "home"), "--lock-dir", filepath.Join(dir, "locks"),
			"--reset-after", reset, "--crash-loop-max", "100000", "--log-level", "debug", "--log-format", "json",
			"--", child, pidFile), nil
	}}
	ls, err := measureInTurn(ctx, c, []contender{ct})
	if err != nil {
		return breakdownResult{}, err
	}
	l := ls[0]
	steps := map[string][]time.Duration{}
	var totals []time.Duration
	sc := bufio.NewScanner(bytes.NewReader(l.log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "restart timing" {
			continue
		}
		for k, v := range m {
			if f, ok := v.(float64); ok && strings.HasSuffix(k, "_us") {
				d := time.Duration(f) * time.Microsecond
				if k == "total_us" {
					totals = append(totals, d)
				} else {
					steps[strings.TrimSuffix(k, "_us")] = append(steps[strings.TrimSuffix(k, "_us")], d)
				}
			}
		}
	}
	if len(totals) == 0 {
		return breakdownResult{}, fmt.Errorf("no \"restart timing\" line in the supervisor's debug log")
	}
	r := breakdownResult{restarts: len(totals), steps: map[string]summary{}, total: summarize(totals)}
	for k, ds := range steps {
		r.steps[k] = summarize(ds)
	}
	return r, nil
}

func (r *report) breakdownSection(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	bd := r.breakdown
	p("## 1a. Restart breakdown\n\n")
	p("Where a restart's time goes inside hermes-supervisor: a run of its own after section 1, the same child, gap and kills, alone on the machine and with `--log-level debug`, which makes the supervisor log one `restart timing` line per restart (%d here). ", bd.restarts)
	p("Each step is timed from the end of the one before; the first starts when the dead gateway's exit is seen, and the settle, 3 ms after the fork, is timed from its own start. Medians of steps do not add up to the median total.\n\n")
	p("| Step | What | median µs | p90 µs | max µs |\n|---|---|---|---|---|\n")
	for _, st := range restartSteps {
		s, ok := bd.steps[st.key]
		if !ok {
			continue
		}
		p("| %s | %s | %d | %d | %d |\n", st.key, st.what, s.Med.Microseconds(), s.P90.Microseconds(), s.Max.Microseconds())
	}
	p("| total | from the exit seen to the new gateway forked | %d | %d | %d |\n\n", bd.total.Med.Microseconds(), bd.total.P90.Microseconds(), bd.total.Max.Microseconds())
}
