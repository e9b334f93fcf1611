//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

type powerResult struct {
	sum summary
	// The plain restart loop that does not sweep.
	loopFor      time.Duration
	loopAttempts int
	loopHealthy  bool
	loopExits    map[int]int
	loopLast     string
	victimAlive  bool // the process that reused the pid, after everything
}

// powerLossLayout writes what a power cut leaves: gateway.pid and
// gateway.lock naming the old gateway's pid, now reused by an unrelated
// live process, and five scoped locks naming it, the demo gateway's among
// them.
func powerLossLayout(l lockstore.Layout, victim procstate.Identity) error {
	old := victim
	old.StartTime = ptr(*old.StartTime + 4242) // the old gateway started at another time
	old.Argv = []string{"/usr/local/bin/hermes", "gateway", "run"}
	rec := lockstore.NewRecord(old, l.Home)
	for _, dir := range []string{l.Home, l.LockDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(rec)
	for _, p := range []string{l.PIDFile(), l.RuntimeLock()} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	scopes := map[string]string{"demo-bot-token": "demo-token", "telegram-bot-token": "t", "discord-bot-token": "d",
		"slack-app-token": "s", "signal-phone": "+15550100"}
	for scope, identity := range scopes {
		r := rec
		r.Scope, r.IdentityHash = scope, lockstore.IdentityHash(identity)
		if err := lockstore.WriteExclusive(l.ScopedLock(scope, identity), r); err != nil {
			return err
		}
	}
	return nil
}

// healthy reports whether the state file says a live gateway other than
// the victim runs.
func healthy(l lockstore.Layout, victim int) bool {
	st, err := lockstore.ReadState(l.StateFile())
	return err == nil && st.GatewayState == "running" && st.PID != victim && st.PID > 0 && syscall.Kill(st.PID, 0) == nil
}

func powerLoss(ctx context.Context, c config, child string) (powerResult, error) {
	var res powerResult
	root, err := os.MkdirTemp("", "hsbench-power")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(root)
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	victimCmd := exec.Command(child, filepath.Join(root, "victim.pid"))
	if err := victimCmd.Start(); err != nil {
		return res, err
	}
	defer func() { _ = victimCmd.Process.Kill(); _ = victimCmd.Wait() }()
	if _, err := waitPID(ctx, filepath.Join(root, "victim.pid"), readBarePID, 0, 10*time.Second); err != nil {
		return res, err
	}
	victim, err := prober.Inspect(ctx, victimCmd.Process.Pid)
	if err != nil {
		return res, err
	}

	var samples []time.Duration
	for i := range c.powerRuns {
		l := lockstore.Layout{Home: filepath.Join(root, "h"+strconv.Itoa(i)), LockDir: filepath.Join(root, "l"+strconv.Itoa(i))}
		if err := powerLossLayout(l, victim); err != nil {
			return res, err
		}
		w, err := newDirWatch(filepath.Dir(l.StateFile()))
		if err != nil {
			return res, err
		}
		cmd := exec.Command(c.supervisor, "run", "--demo", "--home", l.Home, "--lock-dir", l.LockDir)
		logf, err := os.Create(filepath.Join(root, "sup"+strconv.Itoa(i)+".log"))
		if err != nil {
			w.Close()
			return res, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			w.Close()
			logf.Close()
			return res, err
		}
		ok := w.until(ctx, 15*time.Second, func() bool { return healthy(l, victim.PID) }) == nil
		d := time.Since(t0)
		w.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
		if !ok {
			return res, fmt.Errorf("power-loss run %d: never healthy (log: %s)", i, tail(logf.Name()))
		}
		samples = append(samples, d)
	}
	res.sum = summarize(samples)

	// The same layout under a plain restart loop, as systemd's
	// Restart=on-failure with its default RestartSec=100ms runs it.
	l := lockstore.Layout{Home: filepath.Join(root, "loop"), LockDir: filepath.Join(root, "loop-locks")}
	if err := powerLossLayout(l, victim); err != nil {
		return res, err
	}
	res.loopFor, res.loopExits = 10*time.Second, map[int]int{}
	for deadline := time.Now().Add(res.loopFor); time.Now().Before(deadline) && ctx.Err() == nil; {
		// -naive: the gateways whose loop never ends (a Hermes older than
		// gateway.lock); the demo otherwise clears these files as current
		// Hermes does.
		cmd := exec.Command(c.supervisor, "demo-gateway", "-naive", "-home", l.Home, "-lock-dir", l.LockDir)
		var out capped
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return res, err
		}
		res.loopAttempts++
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		// A gateway that got through keeps running: that would be healthy.
		t := time.NewTimer(5 * time.Second)
		select {
		case <-exited:
		case <-t.C:
		}
		t.Stop()
		if healthy(l, victim.PID) {
			res.loopHealthy = true
		}
		select {
		case <-exited:
			res.loopExits[cmd.ProcessState.ExitCode()]++
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		res.loopLast = string(trimNL(out.b))
		if res.loopHealthy {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.victimAlive = prober.Judge(ctx, victim, func([]string) bool { return true }).Verdict == procstate.Alive
	if !res.victimAlive {
		return res, fmt.Errorf("the process that reused the pid (%s) died: something signalled it", victim)
	}
	return res, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// capped keeps the first 4 KiB a child writes.
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := 4096 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
