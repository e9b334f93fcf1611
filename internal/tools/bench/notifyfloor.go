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
	"syscall"
	"time"
)

// notifyFloor measures the floor of section 6's idle cost: floor/notify.c,
// compiled with the host's C compiler, receiving a demo gateway's
// keep-alives at hangInterval, watched as idleCost watches the
// supervisor. Without a C compiler it measures nothing and says why.
func notifyFloor(ctx context.Context, c config) (res idleResult, skipped string, err error) {
	root, err := os.MkdirTemp("", "hsbench-nfloor")
	if err != nil {
		return res, "", err
	}
	defer os.RemoveAll(root)
	bin, skipped, err := buildNotifyFloor(ctx, root)
	if skipped != "" || err != nil {
		return res, skipped, err
	}
	sock := filepath.Join(root, "notify.sock")
	floor, err := startNotifyFloor(ctx, bin, sock, hangInterval)
	if err != nil {
		return res, "", err
	}
	defer floor.stop()
	home := filepath.Join(root, "home")
	gw := exec.Command(c.supervisor, "demo-gateway", "-home", home, "-lock-dir", filepath.Join(home, "locks"))
	gw.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC="+strconv.FormatInt(hangInterval.Microseconds(), 10))
	if err := gw.Start(); err != nil {
		return res, "", err
	}
	defer func() { _ = gw.Process.Signal(syscall.SIGTERM); _ = gw.Wait() }()
	if err := floor.expect(ctx, "ready"); err != nil {
		return res, "", fmt.Errorf("the notify floor heard no keep-alive: %w", err)
	}
	if res, err = watchIdle(ctx, c, floor.cmd.Process.Pid); err != nil {
		return res, "", err
	}
	// It exits when a deadline passes: a floor whose gateway stopped
	// pinging measured an idle process, not a receiver.
	select {
	case <-floor.exited:
		return res, "", fmt.Errorf("the notify floor exited during its windows: the keep-alives stopped")
	default:
		return res, "", nil
	}
}

// buildNotifyFloor compiles floor/notify.c into dir with the host's C
// compiler; skipped says why it did not, when there is none.
func buildNotifyFloor(ctx context.Context, dir string) (bin, skipped string, err error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", "no C compiler (cc) on this host", nil
	}
	bin = filepath.Join(dir, "notifyfloor")
	src, err := filepath.Abs(filepath.Join("internal", "tools", "bench", "floor", "notify.c"))
	if err == nil {
		if _, err = os.Stat(src); err != nil {
			// The package's tests run in its own directory.
			src, err = filepath.Abs(filepath.Join("floor", "notify.c"))
		}
	}
	if err != nil {
		return "", "", err
	}
	if out, err := exec.CommandContext(ctx, cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("compile the notify floor %s: %w\n%s", src, err, out)
	}
	return bin, "", nil
}

// notifyFloorProc is a running floor/notify.c.
type notifyFloorProc struct {
	cmd    *exec.Cmd
	lines  *bufio.Reader
	exited chan struct{} // closed once it exited and was reaped
}

// startNotifyFloor starts bin listening at sock with a keep-alive
// deadline of d, and waits until it is bound.
func startNotifyFloor(ctx context.Context, bin, sock string, d time.Duration) (*notifyFloorProc, error) {
	cmd := exec.Command(bin, sock, strconv.FormatInt(d.Microseconds(), 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &notifyFloorProc{cmd: cmd, lines: bufio.NewReader(out), exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.expect(ctx, "listening"); err != nil {
		p.stop()
		return nil, fmt.Errorf("the notify floor did not bind %s: %w", sock, err)
	}
	return p, nil
}

// stop kills it, if it still runs, and reaps it.
func (p *notifyFloorProc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// expect reads its next line of output, which must be want, within 15 s.
func (p *notifyFloorProc) expect(ctx context.Context, want string) error {
	got := make(chan error, 1)
	go func() {
		line, err := p.lines.ReadString('\n')
		if err == nil && line != want+"\n" {
			err = fmt.Errorf("it said %q, want %q", line, want)
		}
		got <- err
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(15 * time.Second):
		return fmt.Errorf("no %q in 15 s", want)
	case <-ctx.Done():
		return ctx.Err()
	}
}
