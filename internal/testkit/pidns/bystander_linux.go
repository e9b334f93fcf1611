package pidns

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func bystander() {
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

func startBystander(cmd *exec.Cmd, pid int) error {
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
