package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The scripts' stub Hermes is this test binary under the name hermes (a
// Go program, so that it runs on every OS, Windows under Wine included):
// HERMES_STUB picks the Hermes generation it plays.
//
//	multiplexed  v0.21: the first run refuses with exit 78 and the
//	             multiplexer's message; later runs are the gateway
//	hosted       newer Hermes: the first run attaches to the host gateway
//	             and exits 75, as under a supervisor; later runs are the
//	             gateway
//	refuses      every run refuses with exit 78 and the multiplexer's message
//	attaches     every run exits 75, attached
//
// Each run that is no --help probe appends a line to $WORK/runs-PROFILE.
// A first run of multiplexed or hosted waits for $WORK/proceed-PROFILE, so
// that the script starts the serving gateway after the supervisor's first
// look and the refusal is judged after the exit.
const stubName = "hermes"

// isStubHermes reports whether this process runs as the stub Hermes.
func isStubHermes() bool {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == stubName
}

func stubHermes(args []string, stdout, stderr io.Writer) int {
	profile := "default"
	for i, a := range args {
		switch {
		case a == "--help":
			fmt.Fprintln(stdout, "usage: hermes gateway run [-h] [--replace] [--external-supervisor] [--force]")
			return 0
		case (a == "-p" || a == "--profile") && i+1 < len(args):
			profile = args[i+1]
		}
	}
	runs := filepath.Join(os.Getenv("WORK"), "runs-"+profile)
	before, err := os.ReadFile(runs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, "stub hermes:", err)
		return 1
	}
	first := len(before) == 0
	if err := appendLine(runs, "run"); err != nil {
		fmt.Fprintln(stderr, "stub hermes:", err)
		return 1
	}
	refuse := func() int {
		fmt.Fprintf(stdout, "The default gateway is running as a profile multiplexer and already serves profile '%s'.\n", profile)
		return 78
	}
	attach := func() int {
		fmt.Fprintf(stdout, "Attached profile '%s' to the host gateway.\n", profile)
		return 75
	}
	gen := os.Getenv("HERMES_STUB")
	switch {
	case gen == "refuses":
		return refuse()
	case gen == "attaches":
		return attach()
	case (gen == "multiplexed" || gen == "hosted") && !first:
		return demogateway.Main(args, os.Getenv, stderr)
	case gen == "multiplexed" || gen == "hosted":
		if !waitExists(filepath.Join(os.Getenv("WORK"), "proceed-"+profile)) {
			fmt.Fprintln(stderr, "stub hermes: the script never said to proceed")
			return 1
		}
		if gen == "multiplexed" {
			return refuse()
		}
		return attach()
	}
	fmt.Fprintf(stderr, "stub hermes: unknown HERMES_STUB %q\n", gen)
	return 1
}

// waitExists waits up to 30 s for path to exist.
func waitExists(path string) bool {
	// Polls with a deadline: the file comes from another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// cmdStubHermes, stubhermes DIR, installs the stub Hermes as DIR/hermes
// (hermes.exe on Windows); put DIR first on PATH.
func cmdStubHermes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stubhermes DIR")
	}
	exe, err := os.Executable()
	ts.Check(err)
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	dst := filepath.Join(dir, stubName)
	if strings.EqualFold(filepath.Ext(exe), ".exe") {
		dst += ".exe"
	}
	if os.Link(exe, dst) == nil {
		return
	}
	b, err := os.ReadFile(exe)
	ts.Check(err)
	ts.Check(os.WriteFile(dst, b, 0o755))
}

// signalSentinel, signal-sentinel DIR [PROFILES [ARG...]], is a live
// process the supervisor has no business signalling: it writes DIR/pid (a
// record naming itself) and, on any signal it can catch, appends the
// signal to DIR/signals and exits 42, so that neither a signal nor
// testscript's own interrupt at the end of a script goes unseen or leaves
// it running. SIGKILL (and TerminateProcess) leave no line: the scripts
// check that it is alive too. With PROFILES it also writes
// DIR/host-gateway.json, a host record naming itself exactly (pid,
// createTime, role) for a forgery that lacks only what no file can forge;
// ARGs are ignored, so that its command line can read as a gateway's
// (`-m hermes_cli.main gateway run`).
func signalSentinel() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: signal-sentinel DIR [PROFILES]")
		os.Exit(2)
	}
	dir := os.Args[1]
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, sentinelSignals...)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "signal-sentinel:", err)
		os.Exit(1)
	}
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	self, err := p.Self(context.Background())
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	if len(os.Args) > 2 {
		created, err := p.CreateTime(context.Background(), self.PID)
		if err != nil {
			fail(err)
		}
		body, _ := json.Marshal(map[string]any{
			"role": "gateway", "protocolVersion": 1, "home": dir, "pid": self.PID,
			"createTime": float64(created.UnixMilli()) / 1000, "port": 0,
			"profiles": strings.Split(os.Args[2], ","),
		})
		if err := lockstore.WriteFileAtomic(filepath.Join(dir, lockstore.HostGatewayRecord), body, 0o600); err != nil {
			fail(err)
		}
	}
	rec, _ := json.Marshal(lockstore.NewRecord(self, dir))
	if err := lockstore.WriteFileAtomic(filepath.Join(dir, "pid"), rec, 0o600); err != nil {
		fail(err)
	}
	sig := <-sigs
	if err := appendLine(filepath.Join(dir, "signals"), sig.String()); err != nil {
		fail(err)
	}
	os.Exit(42)
}
