package pidns

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Signalled is the exit code of a bystander that received any catchable
// signal: a test that sees it knows the supervisor signalled a process it
// must never touch.
const Signalled = 42

// Bystander is the body of an unrelated process that happens to get a
// recorded pid: it exits 0 when its stdin closes and Signalled on any
// catchable signal. It never returns. Once it records signals it writes
// bystanderReady to stdout (see StartBystander).
func Bystander() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT)
	os.Stdout.WriteString(bystanderReady)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-sigs:
		os.Exit(Signalled)
	case <-eof:
		os.Exit(0)
	}
}

const bystanderReady = "bystander ready\n"

// StartBystander starts cmd, a Bystander, at pid (see StartAt) and returns
// once it runs and records signals. Before that, its command line reads
// empty and a signal would meet its default action: a test that judged or
// signalled it earlier would test the kernel's exec, not the supervisor.
func StartBystander(cmd *exec.Cmd, pid int) error {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := StartAt(cmd, pid); err != nil {
		return err
	}
	line := make([]byte, len(bystanderReady))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != bystanderReady {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("bystander at pid %d never said it runs: %q %v", pid, line, err)
	}
	return nil
}
