//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestOutputRateLimitSpansRestarts floods the log from a gateway that
// prints its lines and asks to be restarted, again and again: journald's
// RateLimitBurst, which --log-rate-limit-burst mirrors, counts a service's
// lines, not one start's. Each start used to get a burst of its own, so a
// gateway restarting every second logged a burst a second, thirty times
// the limit. Within one interval the log must hold at most one burst of
// gateway output, whatever the number of starts, and say what it dropped.
func TestOutputRateLimitSpansRestarts(t *testing.T) {
	const burst, starts = 50, 4
	exe := testdir.OpenCopy(t, "hermes-supervisor")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "sup.log")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "--home", filepath.Join(dir, "home"), "--lock-dir", filepath.Join(dir, "locks"),
		"--log-format", "json", "run", "--log-file", logFile, "--log-rate-limit-burst", "50", "--log-rate-limit-interval", "1h",
		"--initial-backoff", "1ms", "--max-backoff", "1ms", "--crash-loop-max", "1000",
		// The last start stops its supervisor (its parent), whose exit is
		// the event the test waits for.
		"--", "/bin/sh", "-c", `seq 1 100; echo >> "$0"; [ "$(wc -l < "$0")" -ge `+strconv.Itoa(starts)+` ] && kill -TERM $PPID && exec sleep 60; exit 75`,
		filepath.Join(dir, "starts"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("supervisor: %v (within 60 s, %d starts)", err, readTally(t, logFile).exits)
	}
	tally := readTally(t, logFile)
	if tally.exits != starts {
		t.Fatalf("%d gateway exits logged, want %d", tally.exits, starts)
	}
	if tally.logged > burst || tally.suppressed == 0 {
		t.Errorf("%d starts logged %d lines of gateway output and suppressed %d: want at most %d logged in one interval, the rest counted",
			tally.exits, tally.logged, tally.suppressed, burst)
	}
}

type outputTally struct{ exits, logged, suppressed int }

func readTally(t *testing.T, path string) outputTally {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var n outputTally
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		var e struct {
			Msg   string `json:"msg"`
			Lines int    `json:"lines"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch {
		case e.Msg == "gateway exited":
			n.exits++
		case e.Msg == "gateway output":
			n.logged++
		case strings.HasPrefix(e.Msg, "suppressed "):
			n.suppressed += e.Lines
		}
	}
	return n
}
