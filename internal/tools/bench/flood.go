//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// floodSize is how much each flooding gateway writes.
const floodSize = 64 << 20

// targetFloodRatio is issue 28's bound on the log: about 1.2 log bytes per
// byte the gateway wrote, plus a fixed cost per line. Base85, the densest
// form we log binary in, is 1.25.
const targetFloodRatio = 1.25

type floodRun struct {
	input    string
	limited  bool
	gwBytes  int
	gwLines  int
	logBytes int64 // above the same supervisor's log with a silent gateway
	cpu      time.Duration
}

type floodResult struct {
	entry int64 // log bytes of one empty line of gateway output
	runs  []floodRun
}

// floodInputs are what the flooding gateways write: Hermes-like log text,
// and random binary.
func floodInputs() map[string][]byte {
	line := `2026-01-02 03:04:05,678 INFO gateway.platforms.telegram: message from "ann" handled in 12 ms (session 7f3a)` + "\n"
	text := bytes.Repeat([]byte(line), floodSize/len(line))
	r := rand.New(rand.NewPCG(28, 5))
	bin := make([]byte, floodSize)
	for i := range bin {
		bin[i] = byte(r.UintN(256))
	}
	return map[string][]byte{"text": text, "binary": bin}
}

// floodCost runs `hermes-supervisor run` over a gateway that writes one
// input and exits 78 (so that it is not restarted), with journald's default
// rate limit and without one, and measures the supervisor's log and CPU
// against the same run with a gateway that writes nothing.
func floodCost(ctx context.Context, c config) (floodResult, error) {
	var res floodResult
	dir, err := os.MkdirTemp("", "hsbench-flood")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	write := func(name string, data []byte) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, data, 0o600)
	}
	silent, err := write("silent", nil)
	if err != nil {
		return res, err
	}
	const emptyLines = 100000
	empty, err := write("empty", bytes.Repeat([]byte{'\n'}, emptyLines))
	if err != nil {
		return res, err
	}
	inputs := floodInputs()
	for _, limited := range []bool{false, true} {
		var args []string
		if !limited {
			args = []string{"--log-rate-limit-burst", "0"}
		}
		baseLog, baseCPU, err := floodOnce(ctx, c, silent, args)
		if err != nil {
			return res, err
		}
		if !limited {
			l, _, err := floodOnce(ctx, c, empty, args)
			if err != nil {
				return res, err
			}
			// A line's field may be named "line_escaped", 8 bytes more
			// than the "line" of an empty one: that is part of the fixed
			// cost of a line, as the entry is.
			res.entry = (l-baseLog)/emptyLines + int64(len("_escaped"))
		}
		for _, name := range []string{"text", "binary"} {
			path, err := write(name, inputs[name])
			if err != nil {
				return res, err
			}
			l, cpu, err := floodOnce(ctx, c, path, args)
			if err != nil {
				return res, err
			}
			res.runs = append(res.runs, floodRun{input: name, limited: limited, gwBytes: len(inputs[name]),
				gwLines: bytes.Count(inputs[name], []byte{'\n'}), logBytes: l - baseLog, cpu: cpu - baseCPU})
		}
	}
	return res, nil
}

// floodOnce runs one supervisor over `cat input; exit 78` until it is
// failed, and returns the size of its log and the CPU it used.
func floodOnce(ctx context.Context, c config, input string, args []string) (logBytes int64, cpu time.Duration, err error) {
	root, err := os.MkdirTemp("", "hsbench-flood-run")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(root)
	logPath := filepath.Join(root, "sup.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer logf.Close()
	argv := append([]string{"run", "--log-format", "json", "--home", filepath.Join(root, "home"), "--lock-dir", filepath.Join(root, "locks")}, args...)
	argv = append(argv, "--", "/bin/sh", "-c", `cat "$0"; exit 78`, input)
	cmd := exec.Command(c.supervisor, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	data, err := os.ReadFile(input)
	if err != nil {
		return 0, 0, err
	}
	// The exit waits for the rest of the output only so long (outputDrain
	// in supervisor/child.go): on a slow host the last lines are logged
	// after the transition to failed, so the run is over once that is
	// logged and every line is accounted for, logged or suppressed.
	want := logLines(data)
	var tally floodTally
	for stalled := time.Now(); ; {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		grew, err := tally.read(logPath)
		if err != nil {
			return 0, 0, err
		}
		if tally.failed && tally.lines+tally.suppressed == want {
			break
		}
		if grew {
			stalled = time.Now()
		} else if time.Since(stalled) > floodStall {
			return 0, 0, fmt.Errorf("the log of a flood of %s stopped growing for %s: failed %v, %d lines logged and %d suppressed of %d (log: %s)",
				input, floodStall, tally.failed, tally.lines, tally.suppressed, want, logPath)
		}
		// Polled: the supervisor's log file grows in another process.
		time.Sleep(20 * time.Millisecond)
	}
	cpu, _, err = taskStats(cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	st, err := os.Stat(logPath)
	if err != nil {
		return 0, 0, err
	}
	return st.Size(), cpu, nil
}

// floodStall bounds how long a flood run's log may stay as it is before
// the run is given up on, rather than waited for forever.
const floodStall = time.Minute

// logLines is how many entries of gateway output the supervisor logs for
// data: one per newline, and one for a last line without one.
func logLines(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// floodTally reads a supervisor's JSON log as it grows and counts its
// entries of gateway output, the lines its reports say were suppressed,
// and whether the transition to failed has been logged.
type floodTally struct {
	off        int64
	rest       []byte // a last line not yet ended
	lines      int
	suppressed int
	failed     bool
}

// read takes in what was appended to the log since the last read, and
// reports whether anything was.
func (t *floodTally) read(path string) (grew bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.ReadAt(buf, t.off)
		t.off += int64(n)
		grew = grew || n > 0
		t.rest = append(t.rest, buf[:n]...)
		for {
			i := bytes.IndexByte(t.rest, '\n')
			if i < 0 {
				break
			}
			if err := t.entry(t.rest[:i]); err != nil {
				return grew, err
			}
			t.rest = t.rest[i+1:]
		}
		t.rest = slices.Clone(t.rest) // keeps no more than the last line of buf
		if errors.Is(err, io.EOF) || n == 0 {
			return grew, nil
		}
		if err != nil {
			return grew, err
		}
	}
}

func (t *floodTally) entry(line []byte) error {
	switch {
	case bytes.Contains(line, []byte(`"msg":"gateway output"`)):
		t.lines++
	case bytes.Contains(line, []byte(`"msg":"suppressed `)):
		var e struct{ Lines int }
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("a report of suppressed output: %w: %s", err, line)
		}
		t.suppressed += e.Lines
	case bytes.Contains(line, []byte(`"to":"failed"`)):
		t.failed = true
	}
	return nil
}

// net is the log bytes per gateway byte once each line's entry is paid.
func (f floodResult) net(r floodRun) float64 {
	return float64(r.logBytes-int64(r.gwLines)*f.entry) / float64(r.gwBytes)
}

func (f floodResult) worstNet() (worst float64) {
	for _, r := range f.runs {
		if !r.limited {
			worst = max(worst, f.net(r))
		}
	}
	return worst
}

// targets is the output row of the targets table.
func (f floodResult) targets() string {
	var parts []string
	for _, r := range f.runs {
		if !r.limited {
			parts = append(parts, fmt.Sprintf("%s %.3f", r.input, f.net(r)))
		}
	}
	return fmt.Sprintf("| Gateway output, log bytes per byte written, no rate limit | ≤ %.2f + one entry (%d bytes) per line | %s | %s |\n",
		targetFloodRatio, f.entry, strings.Join(parts, ", "), met(f.worstNet() <= targetFloodRatio))
}

// floodSection starts section 7 of benchmarks.md.
const floodSection = "## 7. Output flood\n"

func (f floodResult) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s\n", floodSection)
	p("`hermes-supervisor run --log-format json -- sh -c 'cat FILE; exit 78'`: the gateway writes %d MiB and exits 78, so it is not restarted; ", floodSize>>20)
	p("text is a Hermes-like log line (%d bytes) over and over, binary is random bytes (a newline every 256 on average). ", len(`2026-01-02 03:04:05,678 INFO gateway.platforms.telegram: message from "ann" handled in 12 ms (session 7f3a)`)+1)
	p("Log bytes and CPU are the supervisor's above the same run with a gateway that writes nothing; ")
	p("an entry, the fixed cost of a line, is measured as the log of %d empty lines plus 8 bytes for the longest field name (`line_escaped` where an empty line has `line`): %d bytes. ", 100000, f.entry)
	p("Rate limit on is journald's default, 10000 lines per 30 s, and what it drops is counted in one line when the gateway's output ends; off is `--log-rate-limit-burst 0`.\n\n")
	p("| input | rate limit | gateway MiB | lines | log MiB | log bytes per byte | net of entries | CPU | CPU per MiB |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range f.runs {
		on := "off"
		if r.limited {
			on = "on"
		}
		mib := float64(r.gwBytes) / (1 << 20)
		net := "—" // most lines are not logged at all
		if !r.limited {
			net = fmt.Sprintf("%.3f", f.net(r))
		}
		p("| %s | %s | %.0f | %d | %.1f | %.3f | %s | %s | %s |\n", r.input, on, mib, r.gwLines, float64(r.logBytes)/(1<<20),
			float64(r.logBytes)/float64(r.gwBytes), net, r.cpu.Round(time.Millisecond), (time.Duration(float64(r.cpu) / mib)).Round(10*time.Microsecond))
	}
	p("\nTarget (issue 28): about 1.2 log bytes per byte plus a fixed cost per line. Text is logged as itself; a line with a stray invalid byte as text with `\\xNN`; ")
	p("binary in base85, 1.25 per byte: no text form can do much better for random bytes, since JSON leaves 93 printable ASCII characters unescaped and log2(93) = 6.54 bits per character puts the floor at 1.22; the worst net ratio without the limit is %.3f: %s.\n\n", f.worstNet(), met(f.worstNet() <= targetFloodRatio))
	return b.String()
}

// spliceFlood puts a flood-only run into the benchmarks.md at path: its
// section and its row of the targets table are replaced, the rest is kept.
func spliceFlood(path string, f floodResult, started time.Time, args []string) error {
	note := fmt.Sprintf("*Section 7 and its target were measured on their own (`go run ./internal/tools/bench %s`) on %s, in %s; the other sections are from the full run named at the top.*\n\n",
		strings.Join(args, " "), started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Round(time.Second))
	return spliceSection(path, floodSection, f.markdown()+note, f.targets(), "| Gateway output, log bytes per byte")
}

// spliceSection puts section under heading into the benchmarks.md at path
// (which it makes if missing), and into its targets table the rows
// targets, in place of the rows starting with one of old: a part run on
// its own keeps the other sections of the last full run.
func spliceSection(path, heading, section, targets string, old ...string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(path, []byte(section), 0o644)
	}
	if err != nil {
		return err
	}
	var lines []string
	inTable, added := false, false
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if slices.ContainsFunc(old, func(o string) bool { return strings.HasPrefix(l, o) }) {
			continue
		}
		if strings.HasPrefix(l, "| What | Target |") {
			inTable = true
		}
		if inTable && !added && !strings.HasPrefix(l, "|") {
			lines = append(lines, targets)
			added = true
		}
		lines = append(lines, l)
	}
	return os.WriteFile(path, []byte(replaceSection(strings.Join(lines, ""), heading, section)), 0o644)
}

// replaceSection puts section in place of the one starting with heading in
// doc (up to the next "## " heading), or at the end if doc has none.
func replaceSection(doc, heading, section string) string {
	i := strings.Index(doc, heading)
	if i < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	rest := doc[i+len(heading):]
	end := len(rest)
	if j := strings.Index(rest, "\n## "); j >= 0 {
		end = j + 1
	}
	return doc[:i] + section + rest[end:]
}
